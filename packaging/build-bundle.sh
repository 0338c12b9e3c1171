#!/usr/bin/env bash
# Build the standalone one-folder bundle with PyInstaller: packaging/dist/dpdesk/ and the
# archive to carry it, packaging/dist/dpdesk-VERSION-linux-x86_64.tar.gz. The folder's
# `dpdesk` runs the desktop application and every CLI command on a Linux x86-64 machine with
# no Python installed (the system libraries Qt loads come from the machine:
# `python3 dpdesk/hostlibs.py --packages window` lists the Debian packages).
#
#   bash packaging/build-bundle.sh           build in a Debian 11 chroot (glibc 2.31), so the
#                                            bundle runs on Debian 11 and everything newer
#   bash packaging/build-bundle.sh --host    build on this machine with PYTHON (the bundle then
#                                            needs this machine's glibc or newer)
#
# The Debian 11 build needs root, debootstrap and the network to Debian's archive and the
# package registry; its chroot and the CPython 3.11 built there (build-python.sh: Debian 11
# has Python 3.9 only) are cached in $DPDESK_CACHE (default /work/cache), so only the first
# run takes long. PyInstaller goes into a build venv, never into dpdesk's dependencies.
# Two builds of one commit give the same archive, byte for byte: every time stamp is the
# last commit's (SOURCE_DATE_EPOCH), archive members are sorted and owned by 0:0, and gzip
# stores no time (packaging/check-reproducible.sh checks it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
source "$here/lib.sh"
dist="$here/dist"
mode="${1:-debian11}"
case "$mode" in --host) mode=host ;; debian11) ;; *) echo "usage: build-bundle.sh [--host]" >&2; exit 2 ;; esac
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(source_date_epoch "$root")}"
BUILD_PYTHON=/opt/dpdesk-python3.11

if [ "$mode" = debian11 ]; then
  [ "$(id -u)" = 0 ] || { echo "build-bundle: the Debian 11 build needs root (chroot); or use --host" >&2; exit 1; }
  # Qt's system libraries too: PyInstaller loads Qt to find its parts (the bundle leaves them out)
  chroot_root="$(make_chroot bullseye bullseye-build build-essential dpkg-dev ca-certificates patch xz-utils \
                 libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev libsqlite3-dev uuid-dev \
                 $(python3 "$root/dpdesk/hostlibs.py" --packages window))"
  if [ ! -x "$chroot_root$BUILD_PYTHON/bin/python3.11" ]; then
    echo "Building CPython 3.11 in the Debian 11 chroot (once; ~15 minutes)"
    cp "$here/build-python.sh" "$chroot_root/root/build-python.sh"
    in_chroot "$chroot_root" --net bash /root/build-python.sh "$BUILD_PYTHON"
  fi
  echo "Building the bundle in the Debian 11 chroot $chroot_root"
  # pip there trusts what pip here trusts (a proxy's own certificate authority, say)
  cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$chroot_root/etc/ssl/certs/dpdesk-build-host.crt"
  DPDESK_CHROOT_BIND="$root" in_chroot "$chroot_root" --net \
    env SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" PYTHON="$BUILD_PYTHON/bin/python3.11" \
    PIP_CERT=/etc/ssl/certs/dpdesk-build-host.crt PIP_DISABLE_PIP_VERSION_CHECK=1 \
    bash /mnt/host/packaging/build-bundle.sh --host
  exit 0
fi

python="${PYTHON:-python3}"
pyinstaller="${PYINSTALLER:-pyinstaller>=6.22,<7}"
build="$here/build/$("$python" -c 'import platform, sys; print(f"py{sys.version_info[0]}{sys.version_info[1]}-glibc{platform.libc_ver()[1]}")')"
venv="$build/venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "Creating the build environment $venv"
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
echo "Installing dpdesk (from a wheel of the checkout) and PyInstaller into it"
rm -rf "$build/wheel"
build_dpdesk_wheel "$root" "$build/wheel" "$venv/bin/python"
wheel="$(ls "$build"/wheel/dpdesk-*.whl)"
# The pinned Qt (PySide6-Essentials) is built for glibc 2.34 and pip here may refuse it on an older
# one (Debian 11): its wheels are installed for that platform first, and the spec carries them as
# files (dpdesk.spec: AS_INSTALLED); the window then needs glibc 2.34, the command line does not.
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
qt_pin="$(sed -n 's/.*"\(PySide6-Essentials==[^"]*\)".*/\1/p' "$root/pyproject.toml")"
"${pip[@]}" install --quiet --no-deps --upgrade --platform manylinux_2_34_x86_64 --only-binary=:all: \
  --target "$site" "$qt_pin" "shiboken6==${qt_pin#*==}"
"${pip[@]}" install --quiet "$wheel" "$pyinstaller"
"${pip[@]}" install --quiet --no-deps --force-reinstall "$wheel"   # this checkout's code, same version or not

echo "Running PyInstaller"
rm -rf "$dist/dpdesk" "$build/pyinstaller"
PYTHONHASHSEED=0 "$venv/bin/pyinstaller" --noconfirm --log-level WARN \
  --distpath "$dist" --workpath "$build/pyinstaller" "$here/dpdesk.spec"

bundle="$dist/dpdesk"
# links PyInstaller made to the parts left out (Arrow Flight) lead nowhere
find "$bundle" -xtype l -delete
# the menu entry goes with the bundle: bash dpdesk/install-desktop.sh
cp "$here/install-desktop.sh" "$here/dpdesk.desktop" "$bundle/"
mkdir -p "$bundle/icons"
cp "$root"/resources/icons/dpdesk.svg "$root"/resources/icons/dpdesk-*.png "$bundle/icons/"

# it must start without any Python around it
version="$(env -i PATH=/usr/bin:/bin HOME="$build" "$bundle/dpdesk" --version)"
glibc="$(ldd --version | head -1 | grep -oE '[0-9]+\.[0-9]+$')"
packages="$("$venv/bin/python" -m dpdesk.hostlibs --packages window)"
cat > "$bundle/README.txt" <<TXT
$version, standalone (no Python needed) for x86-64 Linux with glibc $glibc or newer.
    ./dpdesk                      open the desktop application
    ./dpdesk sample               copy the sample dataset (groceries.csv.gz) into this folder
    ./dpdesk --help               the command-line commands (inspect, release, ...)
    bash install-desktop.sh       add dpdesk to your desktop's menu
The window needs these Debian packages (any desktop has them; as root):
    apt-get install $packages
TXT
archive="$dist/dpdesk-${version#dpdesk }-linux-x86_64.tar.gz"
# reproducible: sorted members, one time stamp, no owners, no time in the gzip header
tar -C "$dist" --sort=name --format=gnu --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  --mode=u+rw,go-w,go+r -cf - dpdesk | gzip -n -9 > "$archive"
echo "Bundle: $bundle ($version, glibc >= $glibc, $(du -sh "$bundle" | cut -f1)); archive: $archive ($(du -sh "$archive" | cut -f1))"
