#!/usr/bin/python3
"""Stream changes from vstreamd, save the resume position after each transaction, and resume
from it on the next run.

    python3 examples/python/stream.py --server 127.0.0.1:15991 --position-file pos.json [--table T] [--max-rows N]

Needs Debian's python3-grpcio and python3-grpc-tools; the code for the protos is generated
from proto/ on first use.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "..", "proto")


def generated_code():
    """Generates the Python code of the protos into a cache directory and imports it."""
    out = os.path.join(tempfile.gettempdir(), "vstream-python-" + str(os.getuid()))
    os.makedirs(out, exist_ok=True)
    files = ["binlogdata.proto", "query.proto", "topodata.proto", "vtrpc.proto", "vstream/v1/vstream.proto"]
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + PROTO, "--python_out=" + out,
                    "--grpc_python_out=" + out] + files, check=True)
    sys.path.insert(0, out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", default="127.0.0.1:15991")
    p.add_argument("--position-file", required=True, help="where the resume position is kept")
    p.add_argument("--table", default="", help="stream only this table")
    p.add_argument("--max-rows", type=int, default=0, help="stop after the transaction holding this many rows")
    p.add_argument("--token", default=os.environ.get("VSTREAM_TOKEN", ""))
    args = p.parse_args()

    generated_code()
    import grpc
    from google.protobuf import json_format
    import binlogdata_pb2
    from vstream.v1 import vstream_pb2, vstream_pb2_grpc

    vgtid = binlogdata_pb2.VGtid()
    if os.path.exists(args.position_file):
        with open(args.position_file) as f:
            json_format.Parse(f.read(), vgtid)
    else:
        vgtid.shard_gtids.add(gtid="current")
    start = vstream_pb2.Start(vgtid=vgtid)
    if args.table:
        start.filter.rules.add(match=args.table)

    # The stream stays open after the client's last message: acks are optional.
    requests = iter([vstream_pb2.StreamRequest(start=start)])
    metadata = [("authorization", "Bearer " + args.token)] if args.token else []
    channel = grpc.insecure_channel(args.server)
    stub = vstream_pb2_grpc.VStreamServiceStub(channel)
    rows, in_txn = 0, False
    for resp in stub.Stream(requests, metadata=metadata):
        for ev in resp.events:
            name = binlogdata_pb2.VEventType.Name(ev.type)
            if ev.type == binlogdata_pb2.ROW:
                for rc in ev.row_event.row_changes:
                    row = rc.after if rc.HasField("after") else rc.before
                    values, off = [], 0
                    for n in row.lengths:
                        values.append("NULL" if n < 0 else row.values[off:off + n].decode("utf-8", "replace"))
                        off += max(n, 0)
                    print("ROW", ev.row_event.table_name, ",".join(values), flush=True)
                    rows += 1
            else:
                print(name, flush=True)
            if ev.type in (binlogdata_pb2.COMMIT, binlogdata_pb2.DDL, binlogdata_pb2.OTHER):
                in_txn = True
            elif ev.type == binlogdata_pb2.VGTID and in_txn:
                # A VGTID after a COMMIT, DDL or OTHER is a resume point: save it.
                with open(args.position_file, "w") as f:
                    f.write(json_format.MessageToJson(ev.vgtid))
                in_txn = False
                if args.max_rows and rows >= args.max_rows:
                    return


if __name__ == "__main__":
    main()
