#!/usr/bin/env bash
# Build CPython 3.11 (shared library, as PyInstaller needs) into PREFIX from Debian 12's
# source package python3.11, with Debian's security patches applied. Runs inside the
# Debian 11 build chroot (build-bundle.sh calls it), so the Python the bundle carries needs
# no newer glibc than Debian 11's 2.31: Debian 11 itself ships Python 3.9 only.
#
#   bash build-python.sh PREFIX
#
# Needs the network to Debian's archive (deb-src of bookworm) and build-essential,
# dpkg-dev and the -dev packages listed in build-bundle.sh.
set -euo pipefail
prefix="$1"
work="$(mktemp -d /tmp/python-build.XXXXXX)"
cd "$work"

# the source of Debian 12's python3.11 (the newest 3.11 Debian has), fetched with apt
mkdir -p apt/lists apt/cache
# (the main archive: bookworm's point releases carry the security fixes too)
echo "deb-src ${DEBIAN_MIRROR:-http://deb.debian.org/debian} bookworm main" > apt/sources.list
apt_opts=(-o Dir::Etc::SourceList="$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt/cache"
          -o APT::Get::AllowUnauthenticated=false -o Debug::NoLocking=1)
apt-get "${apt_opts[@]}" update -qq
apt-get "${apt_opts[@]}" source --download-only -qq python3.11
dsc="$(ls python3.11_*.dsc)"
echo "Source: $dsc"
# unpack the upstream tarball and apply only Debian's fixes of CVEs and upstream bugs
# (backports and crash fixes); its patches that move files into Debian's own layout
# (dist-packages, multiarch, disabled ensurepip) stay out
dpkg-source --no-check --skip-patches -x "$dsc" src >/dev/null
cd src
applied=0
while read -r patch _; do
  case "$patch" in
    CVE-*|[0-9][0-9][0-9][0-9]-3.11-*|*crash*|*deadlock*|*nullptr*|skip-xml-tests*)
      patch -p1 --quiet --forward < "debian/patches/$patch"
      applied=$((applied + 1)) ;;
  esac
done < debian/patches/series
echo "Applied $applied of Debian's fixes"
# one of them (CVE-2026-4224) makes pyexpat use an internal header, which Debian's build
# allows by building pyexpat into the interpreter; as a shared module it needs the define
# that upstream's own extension modules use for this
if grep -q '^#include "pycore_' Modules/pyexpat.c && ! grep -q Py_BUILD_CORE_MODULE Modules/pyexpat.c; then
  sed -i '1i #ifndef Py_BUILD_CORE_BUILTIN\n#  define Py_BUILD_CORE_MODULE 1\n#endif' Modules/pyexpat.c
fi

./configure --quiet --prefix="$prefix" --enable-shared --with-ensurepip=install \
  LDFLAGS="-Wl,-rpath,$prefix/lib" >/dev/null
trap 'cd /; rm -rf "$work"' EXIT
make -j"$(nproc)" --quiet >/dev/null 2>make.log || { grep -m 20 -B2 -A3 error make.log; exit 1; }
make --quiet install >/dev/null 2>>make.log || { grep -m 20 -B2 -A3 -i error make.log; exit 1; }
cd /
"$prefix/bin/python3.11" -c 'import ssl, sqlite3, lzma, bz2, zlib, ctypes, hashlib, sys; print("built", sys.version.split()[0], "with", ssl.OPENSSL_VERSION)'
