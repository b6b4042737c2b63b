#!/usr/bin/env bash
# Installs what the tests and the demo need on a Debian machine: the MariaDB server
# binaries (the tests start their own throwaway servers). Does nothing when present.
set -euo pipefail

if command -v mariadbd >/dev/null 2>&1 || [[ -x /usr/sbin/mariadbd ]]; then
	exit 0
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	sudo=(sudo)
fi
echo "installing mariadb-server with apt-get" >&2
# The ${a[@]+...} form keeps an empty array legal under set -u on bash < 4.4.
${sudo[@]+"${sudo[@]}"} apt-get update
${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y mariadb-server
