#!/usr/bin/env bash
# Lists the Go packages whose tests start a database server (their test binary
# depends on internal/testdb), for running them once more per flavor.
set -euo pipefail
cd "$(dirname "$0")/.."
go list -test -f '{{.ImportPath}} {{join .Deps " "}}' "${@:-./...}" |
	awk '/ github.com\/vstream-cdc\/vstream\/internal\/testdb( |$)/ { print $1 }' |
	sed -e 's/ .*//' -e 's/_test$//' -e 's/\.test$//' | sort -u
