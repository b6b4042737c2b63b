#!/usr/bin/env bash
# Installs a MySQL server for the tests into a private prefix, never system-wide.
#
# Debian unstable's mysql-server-core (MySQL 9.x LTS) needs a newer glibc and libstdc++ than
# a stable machine has, so it is not apt-get installed: a private apt state points the
# machine's own configured Debian mirror at suite sid, downloads the dependency closure of
# mysql-server-core and mysql-client-core, and unpacks each package into the prefix with
# dpkg -x. Small wrappers in $PREFIX/bin run each binary through the unpacked dynamic loader
# with the prefix's library path, so nothing outside the prefix is touched or used.
#
# The prefix is $VSTREAM_MYSQL_PREFIX, or ${XDG_CACHE_HOME:-~/.cache}/vstream/mysql, which is
# where internal/testdb looks. Does nothing when the prefix already holds a working mysqld.
set -euo pipefail

prefix=${VSTREAM_MYSQL_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/vstream/mysql}
suite=${VSTREAM_MYSQL_SUITE:-sid}
packages=(mysql-server-core mysql-client-core)

if [[ -x $prefix/bin/mysqld ]] && "$prefix/bin/mysqld" --version >/dev/null 2>&1; then
	exit 0
fi

# The Debian mirror this machine is configured with: the first archive URI (not the security
# archive) in its apt sources, in either the deb822 or the one-line format.
mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] || continue
		awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -r $f ]] || continue
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($i !~ /security/) print $i; break } }' "$f"
	done
}
uri=$(mirror | head -n 1)
if [[ -z $uri ]]; then
	echo "install-mysql: no Debian mirror found in /etc/apt/sources.list{,.d}" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vstream-mysql-apt.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/etc/preferences.d" "$work/debs"
# apt's download sandbox user must be able to write there.
chmod 755 "$work"
chmod 777 "$work/debs" "$work/lists/partial"
: >"$work/status"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
signed=""
if [[ -r $keyring ]]; then
	signed="[signed-by=$keyring]"
fi
echo "deb $signed $uri $suite main" >"$work/etc/sources.list"
apt_opts=(
	-o "Dir::Etc::sourcelist=$work/etc/sources.list"
	-o "Dir::Etc::sourceparts=-"
	-o "Dir::Etc::preferencesparts=$work/etc/preferences.d"
	-o "Dir::State::Lists=$work/lists"
	-o "Dir::State::status=$work/status"
	-o "Dir::Cache=$work/cache"
	-o "Dir::Cache::pkgcache=$work/pkgcache.bin"
	-o "Dir::Cache::srcpkgcache=$work/srcpkgcache.bin"
	-o "APT::Architecture=amd64"
	-o "Debug::NoLocking=1"
)

echo "install-mysql: fetching the $suite package lists from $uri" >&2
apt-get "${apt_opts[@]}" -q update >&2

# The dependency closure, without what only packaging scripts use: the prefix is unpacked,
# never configured, so debconf, perl and the init system are not needed.
closure=$(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests \
	--no-conflicts --no-breaks --no-replaces --no-enhances "${packages[@]}" |
	awk '/^[a-z0-9]/ { print $1 }' | sort -u |
	grep -Ev '^(debconf|debconf-2.0|perl|perl-base|perl-modules-.*|libperl.*|init-system-helpers|adduser|passwd|lsb-base|sysvinit-utils|dpkg|tar|coreutils|gzip|bash|base-files|mysql-common|mariadb-common)$')
# A virtual package has no candidate and apt-get download would refuse it; pkgnames lists
# only real ones.
mapfile -t real < <(comm -12 <(echo "$closure") <(apt-cache "${apt_opts[@]}" pkgnames | sort -u))
echo "install-mysql: downloading ${#real[@]} packages" >&2
(cd "$work/debs" && apt-get "${apt_opts[@]}" -q download "${real[@]}" >&2)

staging="$prefix.new"
rm -rf "$staging"
mkdir -p "$staging/root" "$staging/bin"
for deb in "$work"/debs/*.deb; do
	dpkg -x "$deb" "$staging/root"
done

root=$staging/root
loader=$(find "$root" -name 'ld-linux-x86-64.so.2' | head -n 1)
if [[ -z $loader ]]; then
	echo "install-mysql: the unpacked libc has no ld-linux-x86-64.so.2" >&2
	exit 1
fi
# Paths inside the wrappers point at the final prefix, which the staging directory becomes.
final_root=$prefix/root
final_loader=$final_root/${loader#"$root"/}
libpath="$final_root/lib/x86_64-linux-gnu:$final_root/usr/lib/x86_64-linux-gnu:$final_root/usr/lib/x86_64-linux-gnu/mysql/private"
for b in usr/sbin/mysqld usr/bin/mysql usr/bin/mysqladmin usr/bin/mysqlbinlog usr/bin/mysqldump; do
	[[ -x $root/$b ]] || continue
	name=$(basename "$b")
	cat >"$staging/bin/$name" <<EOF
#!/bin/sh
# Runs $name from the private MySQL prefix through its own dynamic loader and libraries.
exec "$final_loader" --library-path "$libpath" "$final_root/$b" "\$@"
EOF
	chmod +x "$staging/bin/$name"
done
if [[ ! -x $staging/bin/mysqld ]]; then
	echo "install-mysql: mysql-server-core did not unpack a usr/sbin/mysqld" >&2
	exit 1
fi

rm -rf "$prefix"
mv "$staging" "$prefix"
if ! version=$("$prefix/bin/mysqld" --version 2>&1); then
	echo "install-mysql: the installed mysqld does not run: $version" >&2
	exit 1
fi
echo "install-mysql: $version (in $prefix)" >&2
