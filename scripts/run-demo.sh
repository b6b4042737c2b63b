#!/usr/bin/env bash
# Runs the whole pipeline locally: a demo MariaDB (or MySQL with VSTREAM_TEST_FLAVOR=mysql) with a write load
# (bin/demodb), vstreamd reading its binlog, and the vstream CLI printing the
# stream in the foreground. Ctrl-C stops everything and removes the demo
# database. Background logs go to files (paths printed below) so they do not
# interleave with the stream output.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
LISTEN=${LISTEN:-127.0.0.1:15991}
listen_host=${LISTEN%:*}
listen_port=${LISTEN##*:}

work=$(mktemp -d "${TMPDIR:-/tmp}/vstream-demo.XXXXXX")
pids=()

cleanup() {
	local status=$?
	trap - EXIT INT TERM
	# Newest first: vstreamd should go before the database it reads from.
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

alive() { kill -0 "$1" 2>/dev/null; }

"$BIN/demodb" --dsn-file "$work/dsn" >/dev/null 2>"$work/demodb.log" &
demodb=$!
pids+=("$demodb")
echo "demodb log: $work/demodb.log" >&2

for ((i = 0; i < 1200; i++)); do
	[[ -s $work/dsn ]] && break
	if ! alive "$demodb"; then
		echo "demodb exited before it was ready:" >&2
		tail -n 30 "$work/demodb.log" >&2
		exit 1
	fi
	sleep 0.1
done
if [[ ! -s $work/dsn ]]; then
	echo "timed out waiting for demodb" >&2
	exit 1
fi
DSN=$(<"$work/dsn")
echo "demo database: $DSN" >&2

"$BIN/vstreamd" --mysql-dsn "$DSN" --listen "$LISTEN" >"$work/vstreamd.log" 2>&1 &
vstreamd=$!
pids+=("$vstreamd")
echo "vstreamd log: $work/vstreamd.log" >&2

for ((i = 0; i < 300; i++)); do
	if (exec 3<>"/dev/tcp/$listen_host/$listen_port") 2>/dev/null; then
		break
	fi
	if ! alive "$vstreamd"; then
		echo "vstreamd exited before it was listening:" >&2
		tail -n 30 "$work/vstreamd.log" >&2
		exit 1
	fi
	sleep 0.1
done
if ! (exec 3<>"/dev/tcp/$listen_host/$listen_port") 2>/dev/null; then
	echo "timed out waiting for vstreamd on $LISTEN" >&2
	exit 1
fi

"$BIN/vstream" --server "$LISTEN" --position current
