#!/usr/bin/env bash
# Collect dpdesk and every dependency as wheels for Linux x86-64 and CPython 3.11, 3.12 and
# 3.13 (Debian 12 ships 3.11, Debian 13 ships 3.13) into one folder that can be carried to a
# machine without network and installed there with install-offline.sh (copied into the
# folder, with the desktop entry, the icons and check-host.py).
#
#   bash packaging/build-wheelhouse.sh [DIR]        (default: packaging/wheelhouse)
#
# The dependencies are pyproject.toml's, through dpdesk's wheel (built reproducibly from the
# checkout): nothing is listed by hand here. Needs network to the package registry (pip's
# own index settings apply) and reuses pip's cache. PYTHON (default python3) runs pip here.
# DIR/SHA256SUMS covers every file in DIR: `cd DIR && sha256sum -c SHA256SUMS`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
source "$here/lib.sh"
out="${1:-$here/wheelhouse}"
python="${PYTHON:-python3}"
TARGET_PYTHONS=(3.11 3.12 3.13)
# the newest glibc a wheel may need: Debian 12's 2.36 (PySide6 6.10.3 needs 2.34, the rest at most 2.28)
GLIBC_MINOR_MAX=36

mkdir -p "$out"
out="$(cd "$out" && pwd)"
# the folder holds this build's files only
rm -rf "$out"/*.whl "$out"/requirements.txt "$out"/SHA256SUMS "$out"/SHA256SUMS.sig "$out"/icons \
       "$out"/install-offline.sh "$out"/install-desktop.sh "$out"/check-host.py "$out"/dpdesk.desktop \
       "$out"/README.txt "$out"/.by-python

platforms=()
for ((minor = GLIBC_MINOR_MAX; minor >= 17; minor--)); do
  platforms+=(--platform "manylinux_2_${minor}_x86_64")
done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)

echo "Building the dpdesk wheel from $root"
build_dpdesk_wheel "$root" "$out" "$python"
wheel="$(ls "$out"/dpdesk-*.whl)"

# each Python's set in its own folder first; the newer Pythons get the versions resolved for
# the oldest, so every package has one version (requirements.txt then needs no markers, and a
# version without wheels for a newer Python stops the build here)
constraints="$out/.by-python/constraints.txt"
for version in "${TARGET_PYTHONS[@]}"; do
  echo "Collecting the dependencies for CPython $version, manylinux x86-64 (glibc <= 2.$GLIBC_MINOR_MAX)"
  mkdir -p "$out/.by-python/$version"
  constrain=()
  [ -f "$constraints" ] && constrain=(--constraint "$constraints")
  "$python" -m pip download --disable-pip-version-check --progress-bar off \
    --only-binary=:all: --implementation cp --python-version "$version" "${platforms[@]}" "${constrain[@]}" \
    --dest "$out/.by-python/$version" "$wheel" | { grep -E '^(Saved|Successfully|ERROR)' || true; }
  [ -n "$(ls "$out/.by-python/$version")" ] || { echo "build-wheelhouse: no wheels for CPython $version" >&2; exit 1; }
  if [ ! -f "$constraints" ]; then
    for file in "$out/.by-python/$version"/*.whl; do
      basename "$file" | awk -F- '{print $1 "==" $2}'
    done > "$constraints"
  fi
done

# exact versions with hashes: install-offline.sh installs exactly these files and pip
# refuses any that changed on the way (a damaged copy is caught before anything runs)
glibc="$("$python" - "$out" "${TARGET_PYTHONS[@]}" <<'PY'
import hashlib, pathlib, re, shutil, sys
out, versions = pathlib.Path(sys.argv[1]), sys.argv[2:]
found = {}   # (name, version) -> {python: [wheel files]}
for python in versions:
    for wheel in sorted((out / ".by-python" / python).glob("*.whl")):
        name, version = wheel.name.split("-")[:2]
        name = re.sub(r"[-_.]+", "-", name).lower()
        found.setdefault((name, version), {}).setdefault(python, []).append(wheel)
lines = []
for (name, version), by_python in sorted(found.items()):
    files = {}
    for wheels in by_python.values():
        for wheel in wheels:
            files[wheel.name] = wheel
    digests = []
    for file_name, wheel in sorted(files.items()):
        target = out / file_name
        if not target.exists():
            shutil.copyfile(wheel, target)
        digests.append(hashlib.sha256(target.read_bytes()).hexdigest())
    hashes = " ".join(f"--hash=sha256:{d}" for d in sorted(set(digests)))
    lines.append(f"{name}=={version} {hashes}")
(out / "requirements.txt").write_text("\n".join(lines) + "\n")
shutil.rmtree(out / ".by-python")
# the oldest glibc all wheels accept: the newest of each wheel's oldest manylinux tag
legacy = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
floor = (2, 17)
for wheel in out.glob("*.whl"):
    accepted = []
    for tag in wheel.name[:-4].split("-")[-1].split("."):
        if tag.startswith("manylinux_"):
            accepted.append(tuple(int(x) for x in tag.split("_")[1:3]))
        elif tag.split("_")[0] in legacy:
            accepted.append(legacy[tag.split("_")[0]])
    if accepted:
        floor = max(floor, min(accepted))
print(f"{floor[0]}.{floor[1]}")
PY
)"

cp "$here/install-offline.sh" "$here/install-desktop.sh" "$here/dpdesk.desktop" "$out/"
cp "$root/dpdesk/hostlibs.py" "$out/check-host.py"
mkdir -p "$out/icons"
cp "$root"/resources/icons/dpdesk.svg "$root"/resources/icons/dpdesk-*.png "$out/icons/"
cat > "$out/README.txt" <<TXT
dpdesk $(basename "$wheel" | cut -d- -f2): wheels for CPython ${TARGET_PYTHONS[*]} on x86-64 Linux (glibc $glibc or newer).
Check the copy first, in this folder:
    sha256sum -c SHA256SUMS
Install on a machine without network (needs python3 3.11, 3.12 or 3.13 with its venv module):
    bash install-offline.sh            # into ~/.local/share/dpdesk-venv
    bash install-desktop.sh ~/.local/share/dpdesk-venv/bin/dpdesk   # menu entry
TXT
write_sha256sums "$out"

count=$(ls "$out"/*.whl | wc -l)
size=$(du -sh "$out" | cut -f1)
echo "Wheelhouse: $out ($count wheels, $size)"
