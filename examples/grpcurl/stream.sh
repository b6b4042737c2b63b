#!/usr/bin/env bash
# Streams changes from vstreamd with grpcurl through server reflection (no .proto files
# needed), saves the last resume position, and resumes from it on the next run.
#
#   examples/grpcurl/stream.sh ADDR POSITION_FILE [SECONDS]
#
# grpcurl runs at a pinned version with `go run`; python3 picks the position out of its output.
set -euo pipefail
addr=${1:?usage: stream.sh ADDR POSITION_FILE [SECONDS]}
posfile=${2:?usage: stream.sh ADDR POSITION_FILE [SECONDS]}
seconds=${3:-5}
grpcurl=(go run github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3)

vgtid='{"shardGtids":[{"gtid":"current"}]}'
[[ -s $posfile ]] && vgtid=$(<"$posfile")

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# grpcurl ends the stream after --max-time; that is how this example stops. tee prints each
# response as it arrives and keeps a copy for picking out the position.
"${grpcurl[@]}" -plaintext -max-time "$seconds" -d "{\"start\":{\"vgtid\":$vgtid}}" \
	"$addr" vstream.v1.VStreamService/Stream 2>/dev/null | tee "$out" || true

# Keep the last VGTID that follows a COMMIT, DDL or OTHER: the resume point.
python3 - "$out" "$posfile" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
dec, pos, last, after_terminal = json.JSONDecoder(), 0, None, False
while True:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if pos >= len(text):
        break
    resp, pos = dec.raw_decode(text, pos)
    for ev in resp.get("events", []):
        t = ev.get("type")
        if t in ("COMMIT", "DDL", "OTHER"):
            after_terminal = True
        elif t == "VGTID" and after_terminal:
            last, after_terminal = ev["vgtid"], False
if last is not None:
    open(sys.argv[2], "w").write(json.dumps(last))
PY
