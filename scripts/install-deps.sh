#!/usr/bin/env bash
# Installs what a make target needs on a Debian machine, and nothing more:
#
#   install-deps.sh mariadb   the MariaDB server binaries (the tests and the demo start their
#                             own throwaway servers)
#   install-deps.sh mysql     MySQL, unpacked into a private prefix (scripts/install-mysql.sh)
#   install-deps.sh nats      nats-server (the benchmarks' sink runs publish to it)
#   install-deps.sh test      both servers, and what the tests use beside them: Debian's gRPC
#                             for Python (the Python client example), protoc (the canal protobuf
#                             tests decode with protoc --decode_raw, a decoder independent of
#                             ours), Chromium (the status page's test loads it in a headless
#                             browser) and nats-server (the NATS sink's tests publish to a real
#                             one)
#
# With no argument it installs what `test` does. Does nothing for what is present.
set -euo pipefail
cd "$(dirname "$0")"

have_mariadb() { command -v mariadbd >/dev/null 2>&1 || [[ -x /usr/sbin/mariadbd ]]; }
have_python_grpc() { /usr/bin/python3 -c 'import grpc, grpc_tools' >/dev/null 2>&1; }
have_protoc() { command -v protoc >/dev/null 2>&1; }
have_chromium() { command -v chromium >/dev/null 2>&1; }
have_nats() { command -v nats-server >/dev/null 2>&1 || [[ -x /usr/sbin/nats-server ]]; }

want_mysql=0
apt=()
for target in "${@:-test}"; do
	case $target in
	mariadb) have_mariadb || apt+=(mariadb-server) ;;
	mysql) want_mysql=1 ;;
	nats) have_nats || apt+=(nats-server) ;;
	test)
		want_mysql=1
		have_mariadb || apt+=(mariadb-server)
		have_python_grpc || apt+=(python3-grpcio python3-grpc-tools)
		have_protoc || apt+=(protobuf-compiler)
		have_chromium || apt+=(chromium)
		have_nats || apt+=(nats-server)
		;;
	*)
		echo "install-deps: unknown target $target (want mariadb, mysql, nats or test)" >&2
		exit 2
		;;
	esac
done

if ((${#apt[@]} > 0)); then
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		sudo=(sudo)
	fi
	echo "install-deps: installing ${apt[*]} with apt-get" >&2
	# The ${a[@]+...} form keeps an empty array legal under set -u on bash < 4.4.
	${sudo[@]+"${sudo[@]}"} apt-get update
	${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y "${apt[@]}"
fi
if ((want_mysql)); then
	./install-mysql.sh
fi
