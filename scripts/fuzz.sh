#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 10s), one after another:
# 'go test -fuzz' takes one target of one package at a time. New inputs that fail are written
# under the package's testdata/fuzz/, where the next plain 'go test' replays them.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
status=0
while read -r dir; do
	pkg=$(go list "./$dir")
	for name in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
		echo "fuzz: $pkg $name ($fuzztime)" >&2
		if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
			status=1
		fi
	done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sed 's|^\./||' | sort -u)
exit $status
