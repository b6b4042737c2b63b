#!/usr/bin/env bash
# Installs what the tests and the demo need on a Debian machine: the MariaDB server
# binaries (the tests start their own throwaway servers) and, for the Python client example,
# Debian's gRPC for Python, and protoc (the canal protobuf tests decode with protoc
# --decode_raw, a decoder independent of ours), Chromium (the status page's test loads it in
# a headless browser) and nats-server (the NATS JetStream sink's tests publish to a real one).
# Does nothing when they are present.
set -euo pipefail

have_mariadb() { command -v mariadbd >/dev/null 2>&1 || [[ -x /usr/sbin/mariadbd ]]; }
have_python_grpc() { /usr/bin/python3 -c 'import grpc, grpc_tools' >/dev/null 2>&1; }
have_protoc() { command -v protoc >/dev/null 2>&1; }
have_chromium() { command -v chromium >/dev/null 2>&1; }
have_nats() { command -v nats-server >/dev/null 2>&1 || [[ -x /usr/sbin/nats-server ]]; }
if have_mariadb && have_python_grpc && have_protoc && have_chromium && have_nats; then
	exit 0
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	sudo=(sudo)
fi
echo "installing mariadb-server python3-grpcio python3-grpc-tools protobuf-compiler chromium nats-server with apt-get" >&2
# The ${a[@]+...} form keeps an empty array legal under set -u on bash < 4.4.
${sudo[@]+"${sudo[@]}"} apt-get update
${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y mariadb-server python3-grpcio python3-grpc-tools protobuf-compiler chromium nats-server
