#!/usr/bin/env bash
# Build the standalone one-folder bundle with PyInstaller: packaging/dist/dpdesk/ (and
# packaging/dist/dpdesk-VERSION-linux-x86_64.tar.gz to carry it). The folder's `dpdesk`
# runs the desktop application and every CLI command on a Linux x86-64 machine with no
# Python installed (it needs Qt's system libraries, as any desktop has: libGL, libEGL,
# fontconfig, xkbcommon, and for a window the xcb libraries).
#
#   bash packaging/build-bundle.sh
#
# Needs network to the package registry. PyInstaller goes into a build venv
# (packaging/build/venv), never into dpdesk's dependencies. PYTHON (default python3, 3.11
# or newer, built with its shared library) is the Python the bundle carries.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
source "$here/lib.sh"
python="${PYTHON:-python3}"
pyinstaller="${PYINSTALLER:-pyinstaller>=6.22,<7}"
build="$here/build"
dist="$here/dist"
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
"${pip[@]}" install --quiet "$wheel" "$pyinstaller"
"${pip[@]}" install --quiet --no-deps --force-reinstall "$wheel"   # this checkout's code, same version or not

echo "Running PyInstaller"
rm -rf "$dist/dpdesk"
"$venv/bin/pyinstaller" --noconfirm --log-level WARN \
  --distpath "$dist" --workpath "$build/pyinstaller" "$here/dpdesk.spec"

bundle="$dist/dpdesk"
# the menu entry goes with the bundle: bash dpdesk/install-desktop.sh
cp "$here/install-desktop.sh" "$here/dpdesk.desktop" "$bundle/"
mkdir -p "$bundle/icons"
cp "$root"/resources/icons/dpdesk.svg "$root"/resources/icons/dpdesk-*.png "$bundle/icons/"

# it must start without any Python around it
version="$(env -i PATH=/usr/bin:/bin HOME="$build" "$bundle/dpdesk" --version)"
cat > "$bundle/README.txt" <<TXT
$version, standalone (no Python needed) for x86-64 Linux with glibc 2.34 or newer.
    ./dpdesk                      open the desktop application
    ./dpdesk --help               the command-line commands (inspect, release, ...)
    bash install-desktop.sh       add dpdesk to your desktop's menu
TXT
archive="$dist/dpdesk-${version#dpdesk }-linux-x86_64.tar.gz"
tar -C "$dist" -czf "$archive" dpdesk
echo "Bundle: $bundle ($version, $(du -sh "$bundle" | cut -f1)); archive: $archive ($(du -sh "$archive" | cut -f1))"
