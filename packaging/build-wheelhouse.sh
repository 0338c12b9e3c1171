#!/usr/bin/env bash
# Collect dpdesk and every dependency as wheels for Linux x86-64, CPython 3.11, into one
# folder that can be carried to a machine without network and installed there with
# install-offline.sh (copied into the folder, with the desktop entry and icons).
#
#   bash packaging/build-wheelhouse.sh [DIR]        (default: packaging/wheelhouse)
#
# Needs network to the package registry (pip's own index settings apply) and reuses
# pip's cache. Environment: PYTHON (default python3) runs pip here; the target is
# always CPython $TARGET_PYTHON on x86-64 Linux with glibc >= 2.34 (PySide6 6.10 wheels
# are manylinux_2_34: Debian 12, Ubuntu 22.04, RHEL 9 and newer).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
source "$here/lib.sh"
out="${1:-$here/wheelhouse}"
python="${PYTHON:-python3}"
TARGET_PYTHON="3.11"
GLIBC_MINOR_MAX=34

mkdir -p "$out"
out="$(cd "$out" && pwd)"
# the folder holds this build's files only
rm -rf "$out"/*.whl "$out"/requirements.txt "$out"/SHA256SUMS "$out"/icons \
       "$out"/install-offline.sh "$out"/install-desktop.sh "$out"/dpdesk.desktop "$out"/README.txt

platforms=()
for ((minor = GLIBC_MINOR_MAX; minor >= 17; minor--)); do
  platforms+=(--platform "manylinux_2_${minor}_x86_64")
done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)

echo "Building the dpdesk wheel from $root"
build_dpdesk_wheel "$root" "$out" "$python"
wheel="$(ls "$out"/dpdesk-*.whl)"

echo "Collecting the dependencies for CPython $TARGET_PYTHON, manylinux x86-64 (glibc <= 2.$GLIBC_MINOR_MAX)"
"$python" -m pip download --disable-pip-version-check --progress-bar off \
  --only-binary=:all: --implementation cp --python-version "$TARGET_PYTHON" "${platforms[@]}" \
  --dest "$out" "$wheel" | { grep -E '^(Saved|Successfully|ERROR)' || true; }

# exact versions with hashes: install-offline.sh installs exactly these files and pip
# refuses any that changed on the way (a damaged copy is caught before anything runs)
"$python" - "$out" <<'PY'
import hashlib, pathlib, re, sys
out = pathlib.Path(sys.argv[1])
lines, sums = [], []
for wheel in sorted(out.glob("*.whl")):
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    name, version = wheel.name.split("-")[:2]
    name = re.sub(r"[-_.]+", "-", name).lower()
    lines.append(f"{name}=={version} --hash=sha256:{digest}")
    sums.append(f"{digest}  {wheel.name}")
(out / "requirements.txt").write_text("\n".join(lines) + "\n")
(out / "SHA256SUMS").write_text("\n".join(sums) + "\n")
PY

cp "$here/install-offline.sh" "$here/install-desktop.sh" "$here/dpdesk.desktop" "$out/"
mkdir -p "$out/icons"
cp "$root"/resources/icons/dpdesk.svg "$root"/resources/icons/dpdesk-*.png "$out/icons/"
cat > "$out/README.txt" <<TXT
dpdesk $(basename "$wheel" | cut -d- -f2): wheels for CPython $TARGET_PYTHON on x86-64 Linux (glibc 2.34 or newer).
Install on a machine without network (needs python3.11 with its venv module):
    bash install-offline.sh            # into ~/.local/share/dpdesk-venv
    bash install-desktop.sh ~/.local/share/dpdesk-venv/bin/dpdesk   # menu entry
Check the copy first if you like: sha256sum -c SHA256SUMS
TXT

count=$(ls "$out"/*.whl | wc -l)
size=$(du -sh "$out" | cut -f1)
echo "Wheelhouse: $out ($count wheels, $size)"
