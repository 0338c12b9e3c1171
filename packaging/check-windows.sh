#!/usr/bin/env bash
# Run the Windows folder (build-windows.sh's zip) under Wine 10 on this Linux machine, offline,
# as a steward would on Windows:
#
#   bash packaging/check-windows.sh [--zip ZIP]     (default: packaging/dist/dpdesk-VERSION-windows-x86_64.zip)
#
# Wine 10 comes from a Debian 13 chroot (debootstrap minbase + wine, wine64 and mingw-w64 for
# the two test-only shims), made once and cached in $DPDESK_CACHE (default /work/cache, outside
# the repository). In it, without network and with one wineserver for every step
# (packaging/wine/run-steps.sh), a clean Wine prefix without the Z: drive (which would show
# Wine's programs the whole Linux file system, /proc included) gets the zip unpacked into C:\
# and one data folder as D:\, and then:
#   --version, sample, inspect, a release with CSV, JSON and Parquet files and HTML and PDF
#   reports (the PDF's words read back here with pdftotext), ledger verify, two releases started
#   at once against one ε cap (one goes through, the other is refused, the total stays under the
#   cap), dpdesk's file lock (msvcrt) between two processes, a release with its output sent to a file (Windows' code page is not UTF-8), a
#   reserved name (NUL) and a path longer than 260 characters as the output folder (done, or
#   refused in one line before any noise), a CR LF data file, and the desktop application's
#   first screen drawn offscreen (a picture: $OUT/windows-main-window.png), and dpdesk.exe
#   starting the application with pythonw (as a double-click does).
# Wine is not Windows: packaging/README.md says what this cannot prove.
# Needs root (chroot, namespaces), debootstrap and pdftotext here, and the network to Debian's
# archive the first time. Prints one line per check and a summary.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
source "$here/lib.sh"
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$root/dpdesk/__init__.py")"
zip="$here/dist/dpdesk-$version-windows-x86_64.zip"
while [ $# -gt 0 ]; do
  case "$1" in
    --zip) zip="$2"; shift 2 ;;
    *) echo "usage: check-windows.sh [--zip ZIP]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "check-windows: needs root (chroot, namespaces)" >&2; exit 1; }
for tool in debootstrap pdftotext; do
  command -v "$tool" >/dev/null || { echo "check-windows: needs $tool (apt-get install debootstrap poppler-utils)" >&2; exit 1; }
done
[ -f "$zip" ] || { echo "check-windows: no zip $zip (bash packaging/build-windows.sh)" >&2; exit 1; }

OUT="${OUT:-$here/windows-check}"
rm -rf "$OUT"; mkdir -p "$OUT"
started=$SECONDS
echo "Wine 10 (Debian 13 chroot, cached in $DPDESK_CACHE/chroots/trixie-wine)"
chroot_root="$(make_chroot trixie trixie-wine wine wine64 gcc-mingw-w64-x86-64-posix unzip)"
wine_version="$(in_chroot "$chroot_root" wine --version 2>/dev/null || echo unknown)"
work="$(mktemp -d "${TMPDIR:-/tmp}/dpdesk-windows-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/shims" "$work/data"
cp "$zip" "$work/dpdesk.zip"
cp "$here/wine/wcomplex.c" "$here/wine/icuuc.c" "$here/wine/sitecustomize.py" "$work/shims/"
cp "$here/wine/run-steps.sh" "$work/"
echo "  $wine_version; running the steps (one wineserver, no network, no Z: drive)"
DPDESK_CHROOT_BIND="$work" in_chroot "$chroot_root" bash /mnt/host/run-steps.sh || true
results="$work/results" data="$work/data/work"
rm -rf "$OUT/results"; cp -r "$results" "$OUT/results"

passed=0 failed=0
ok() { echo "  ok    $*"; passed=$((passed + 1)); }
bad() { echo "  FAIL  $*"; failed=$((failed + 1)); }
rc() { cat "$results/$1.rc" 2>/dev/null || echo missing; }
# a step's output without Wine's own noise: its notes ("wine: ...") and Arrow's complaint that
# Wine does not describe the processor (GetLogicalProcessorInformationEx); CR LF made LF
WINE_NOISE='^wine: |cpu_info\.cc:[0-9]+: Failed to get processor information'
out() { { grep -avE "$WINE_NOISE" "$results/$1.out" 2>/dev/null || true; } | tr -d '\r'; }
last() { out "$1" | sed '/^$/d' | tail -3 | tr '\n' ' '; }
one_line_error() {   # a refusal: status 2 and one line, no traceback
  [ "$(rc "$1")" = 2 ] && [ "$(out "$1" | sed '/^$/d' | wc -l)" = 1 ] && ! out "$1" | grep -q Traceback
}

app="$(cat "$results/app-folder" 2>/dev/null || echo '?')"
[ -f "$results/wineboot.log" ] && [ "$app" != '?' ] && ok "clean prefix, no Z: drive, zip unpacked into C:\\$app" ||
  bad "prefix and unpacking: $(tail -3 "$results/wineboot.log" 2>/dev/null)"
server_first="$(cat "$results/server-first" 2>/dev/null)" server_last="$(cat "$results/server-last" 2>/dev/null)"

if [ "$(rc version)" = 0 ] && [ "$(out version)" = "dpdesk $version" ]; then ok "--version ($(out version))"
else bad "--version (status $(rc version)): $(last version)"; fi

if [ "$(rc sample)" = 0 ] && [ "$(rc inspect)" = 0 ] && out inspect | grep -q '"rows": 9835'; then
  ok "sample, inspect (9835 rows)"; else bad "sample, inspect (status $(rc sample), $(rc inspect)): $(last inspect)"; fi

pdf_words() { pdftotext "$1" - 2>/dev/null; }
if [ "$(rc release)" = 0 ] && [ -f "$data/release/release.parquet" ] && [ -f "$data/release/release.csv" ] &&
   [ -f "$data/release/release.json" ] && grep -q "ε" "$data/release/privacy-report.html" 2>/dev/null &&
   text="$(pdf_words "$data/release/privacy-report.pdf")" && grep -qi privacy <<<"$text" && grep -q "0.69" <<<"$text"; then
  ok "release: CSV, JSON, Parquet, HTML and PDF reports (pdftotext reads the PDF: $(wc -w <<<"$text") words)"
else
  bad "release (status $(rc release)): $(last release); files: $(ls "$data/release" 2>/dev/null | tr '\n' ' ')"
fi

if [ "$(rc ledger-verify)" = 0 ] && out ledger-verify | grep -q "The ledger is intact"; then
  ok "ledger verify ($(out ledger-verify | grep -o '[0-9]* entries'))"; else bad "ledger verify (status $(rc ledger-verify)): $(last ledger-verify)"; fi

# two at once against a cap of 1 at ε = 0.69 each: exactly one may pass
statuses="$(rc concurrent-1) $(rc concurrent-2)"
spent="$(out capped-list | "${PYTHON:-python3}" -c '
import json, sys
entries = json.loads(sys.stdin.read() or "[]")
print(round(sum(e.get("epsilon") or 0 for e in entries if e.get("kind") == "release"), 6),
      sum(1 for e in entries if e.get("kind") == "release"))' 2>/dev/null || echo "? ?")"
refused="$(for n in 1 2; do if [ "$(rc concurrent-$n)" = 2 ]; then out concurrent-$n; fi; done | sed '/^$/d' | head -1)"
if { [ "$statuses" = "0 2" ] || [ "$statuses" = "2 0" ]; } && [ "${spent% *}" = 0.69 ] && [ "${spent#* }" = 1 ] &&
   grep -qi "cap" <<<"$refused"; then
  ok "two releases at once against a cap of 1: one recorded (ε = 0.69), the other refused: ${refused:0:150}…"
else
  bad "two releases at once against a cap of 1: statuses $statuses, recorded ε and releases: $spent; $(last concurrent-1) | $(last concurrent-2)"
fi

if [ "$(rc lock)" = 0 ] && out lock | grep -q "backend: msvcrt | while held: busy | after release: acquired"; then
  ok "dpdesk/locks.py between two processes: $(out lock | tail -1)"
else bad "dpdesk/locks.py between two processes (status $(rc lock)): $(last lock)"; fi

if [ "$(rc piped)" = 0 ] && grep -q "Released piped" "$data/piped.txt" 2>/dev/null &&
   "${PYTHON:-python3}" -c 'import sys; text = open(sys.argv[1], "rb").read().decode("utf-8"); sys.exit("ε" not in text)' "$data/piped.txt" &&
   out piped-list | grep -q '"kind": "release"'; then
  ok "release with its output sent to a file: status 0, entry recorded, the file in UTF-8 ($(grep -c . "$data/piped.txt") lines)"
else
  bad "release with its output sent to a file (status $(rc piped)): $(cat "$data/piped.txt" "$data/piped-err.txt" 2>/dev/null | tail -3)"
fi

for name in reserved long-path; do
  what="$([ $name = reserved ] && echo "the reserved name NUL as the output folder" || echo "an output path of $((7 * 43 + 11)) characters")"
  if [ "$(rc $name)" = 0 ]; then ok "$what: released ($(out $name | tail -1 | cut -c1-110)…)"
  elif one_line_error $name && out $name | grep -qiE "output folder|cannot write|too long|file name"; then ok "$what: refused in one line: $(out $name | sed '/^$/d' | cut -c1-150)"
  else bad "$what (status $(rc $name)): $(last $name)"; fi
done

if [ "$(rc crlf)" = 0 ] && out crlf | grep -q '"rows": 4, "columns": 3,'; then ok "a CR LF data file (4 people, 3 items: no item kept its \\r)"
else bad "CR LF data file (status $(rc crlf)): $(last crlf)"; fi

if [ "$(rc ledger-final)" = 0 ]; then ok "ledger verify after every step ($(out ledger-final | grep -o '[0-9]* entries'))"
else bad "ledger verify after every step (status $(rc ledger-final)): $(last ledger-final)"; fi

if [ "$(rc window)" = 0 ] && [ -f "$data/window.png" ] && out window | grep -q "saved: True"; then
  cp "$data/window.png" "$OUT/windows-main-window.png"
  colours="$(out window | grep -ao 'colours: [0-9]*' | grep -o '[0-9]*$' | head -1)"
  if [ "${colours:-0}" -gt 50 ]; then ok "main window offscreen: $(out window | grep -o "window .*saved" | sed 's/ saved$//'), $colours colours ($OUT/windows-main-window.png)"
  else bad "main window offscreen: a blank picture ($colours colours)"; fi
else
  bad "main window offscreen (status $(rc window)): $(last window)"
fi

if [ -s "$results/launcher.out" ] && [ -s "$results/launcher-alive.out" ] && [ -f "$results/launcher-log.out" ] &&
   ! grep -q Traceback "$results/launcher-log.out"; then
  ok "dpdesk.exe (double-click) started $(grep -ao 'pythonw.exe.*' "$results/launcher.out" | head -1 | tr -d '\r' | sed 's/ *$//') and the application stayed up (its log without an error)"
else
  bad "dpdesk.exe: pythonw $([ -s "$results/launcher.out" ] && echo started || echo "did not start"), log: $(tail -3 "$results/launcher-log.out" 2>/dev/null)"
fi

echo
servers="$([ -n "$server_first" ] && [ "$server_first" = "$server_last" ] && echo "one wineserver for every step" ||
            echo "wineserver $server_first at the start, $server_last at the end")"
echo "Summary ($passed checks passed, $failed failed; $wine_version, $servers; $((SECONDS - started)) s):"
echo "  $(basename "$zip") ($(du -h "$zip" | cut -f1)) under Wine, offline, no Z: drive: $([ "$failed" = 0 ] && echo pass || echo FAIL)"
echo "Outputs and the screenshot: $OUT"
[ "$failed" = 0 ]
