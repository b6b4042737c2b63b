#!/usr/bin/env bash
# Lists the Go packages whose tests start a database server (their test binary
# depends on internal/testdb), for running them once more per flavor; with --others, the
# packages whose tests start none (make check's fast lane).
set -euo pipefail
cd "$(dirname "$0")/.."
others=0
if [[ ${1:-} == --others ]]; then
	others=1
	shift
fi
go list -test -f '{{.ImportPath}} {{join .Deps " "}}' "${@:-./...}" |
	awk -v others="$others" '
		{
			p = $1
			sub(/(_test|\.test)$/, "", p) # a package, its external tests and its test binary
			db = $0 ~ / github.com\/vstream-cdc\/vstream\/internal\/testdb( |$)/
			pkg[p] = pkg[p] || db
		}
		END { for (p in pkg) if (pkg[p] != others) print p }' | sort
