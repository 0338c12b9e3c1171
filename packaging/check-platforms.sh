#!/usr/bin/env bash
# Run the bundle and the wheelhouse in minimal Debian systems without network, as a steward
# would on a secured machine:
#
#   bash packaging/check-platforms.sh [--bundle ARCHIVE] [--wheelhouse DIR] [11] [12] [13] [22.04]
#
# (default: packaging/dist/dpdesk-VERSION-linux-x86_64.tar.gz, packaging/wheelhouse, all
# four: Debian 11, 12, 13 and Ubuntu 22.04, the oldest system with the glibc the window needs).
# For each system, in a chroot made with debootstrap (minbase) and cached in
# $DPDESK_CACHE (default /work/cache), with the network cut off (unshare --net) and every
# change thrown away afterwards (an overlay):
#   bare   the base system alone: the bundle's --version, sample, inspect and a release with
#          an HTML report work; a PDF report and the window either work or fail with one
#          line that names the missing packages (never a traceback)
#   host   the base system plus the packages packaging/README.md lists (and python3-venv):
#          the bundle and, where Debian's python3 is 3.11-3.13, the wheelhouse installed with
#          install-offline.sh: --version, sample, inspect, a release with HTML and PDF
#          reports (pdftotext must find the report's words), and the window's first screen
#          under Xvfb (a screenshot: $OUT/debian-N-ROUTE.png)
# Needs root, debootstrap, Xvfb, x11-utils, netpbm and poppler-utils on this machine, and
# the network to Debian's archive the first time. Prints one line per check and a summary.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
source "$here/lib.sh"
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$root/dpdesk/__init__.py")"
archive="$here/dist/dpdesk-$version-linux-x86_64.tar.gz"
wheelhouse="$here/wheelhouse"
releases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) archive="$2"; shift 2 ;;
    --wheelhouse) wheelhouse="$2"; shift 2 ;;
    11|12|13|22.04) releases+=("$1"); shift ;;
    *) echo "usage: check-platforms.sh [--bundle ARCHIVE] [--wheelhouse DIR] [11] [12] [13] [22.04]" >&2; exit 2 ;;
  esac
done
[ ${#releases[@]} -gt 0 ] || releases=(11 12 13 22.04)
[ "$(id -u)" = 0 ] || { echo "check-platforms: needs root (chroot, namespaces)" >&2; exit 1; }
for tool in debootstrap Xvfb xwininfo xwdtopnm pnmtopng pdftotext; do
  command -v "$tool" >/dev/null || { echo "check-platforms: needs $tool (apt-get install debootstrap xvfb x11-utils netpbm poppler-utils)" >&2; exit 1; }
done
[ -f "$archive" ] || { echo "check-platforms: no bundle archive $archive (bash packaging/build-bundle.sh)" >&2; exit 1; }
[ -f "$wheelhouse/requirements.txt" ] || { echo "check-platforms: no wheelhouse $wheelhouse (bash packaging/build-wheelhouse.sh)" >&2; exit 1; }

# the release every check makes: ONE place for its arguments
RELEASE_ARGS=(--mechanism lpa --epsilon 0.69 --bound 20 --items from-data --items-are-public)
OUT="${OUT:-$here/platform-check}"
rm -rf "$OUT"; mkdir -p "$OUT"
work="$(mktemp -d "${TMPDIR:-/tmp}/dpdesk-platforms.XXXXXX")"
xvfb_pid=""
cleanup() { [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/host/bundle"
tar -C "$work/host/bundle" -xzf "$archive"
cp -a "$wheelhouse" "$work/host/wheelhouse"
chmod -R a+rX "$work/host"

# one virtual screen for every window check: 1280x800, its frame buffer readable as a file
display=":$((90 + RANDOM % 9))"
mkdir -p "$work/fb"
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp -fbdir "$work/fb" >/dev/null 2>&1 &
xvfb_pid=$!
for _ in $(seq 50); do [ -S "/tmp/.X11-unix/X${display#:}" ] && break; sleep 0.2; done

passed=0 failed=0 summary=()
ok() { echo "  ok    $*"; passed=$((passed + 1)); }
bad() { echo "  FAIL  $*"; failed=$((failed + 1)); }

# run SUITE-CHROOT COMMAND...: in the chroot, offline, the check folder at /mnt/host
run() {
  local chroot_root="$1"; shift
  DPDESK_CHROOT_BIND="$work/host" DPDESK_CHROOT_UPPER="$work/overlay-$(basename "$chroot_root")" DPDESK_CHROOT_X11=1 \
    in_chroot "$chroot_root" env DPDESK_HOME=/tmp/dpdesk-home DISPLAY="$display" "$@"
}

one_line_error() {   # the output of a refusal: a single line, no traceback
  [ "$(printf '%s\n' "$1" | sed '/^$/d' | wc -l)" = 1 ] && ! printf '%s' "$1" | grep -q Traceback
}

# the text first, then the searches: `pdftotext | grep -q` under pipefail fails when grep stops reading early
pdf_has_words() { local text; text="$(pdftotext "$1" - 2>/dev/null)" || return 1
                  grep -qi "privacy" <<<"$text" && grep -q "0.69" <<<"$text"; }

# check_cli CHROOT LABEL DPDESK: the command-line checks with the dpdesk program DPDESK
# (inside the chroot); MODE bare accepts a one-line refusal of the PDF report
check_cli() {
  local chroot_root="$1" label="$2" dpdesk="$3" mode="$4" output out="/mnt/host/out-$2"
  if output="$(run "$chroot_root" "$dpdesk" --version 2>&1)" && [ "$output" = "dpdesk $version" ]; then
    ok "$label: --version ($output)"; else bad "$label: --version: $output"; return; fi
  if output="$(run "$chroot_root" sh -c "mkdir -p $out && cd $out && $dpdesk sample . && $dpdesk inspect --json groceries.csv.gz" 2>&1)" &&
     printf '%s' "$output" | grep -q '"rows": 9835'; then
    ok "$label: sample, inspect (9835 rows)"; else bad "$label: sample, inspect: $output"; fi
  if output="$(run "$chroot_root" "$dpdesk" release "$out/groceries.csv.gz" "${RELEASE_ARGS[@]}" --out "$out/release-html" \
               --formats csv,json,parquet --report html 2>&1)" && grep -q "ε" "$work/host/out-$label/release-html/privacy-report.html"; then
    ok "$label: release, csv/json/parquet and HTML report"; else bad "$label: release with HTML report: $output"; fi
  output="$(run "$chroot_root" "$dpdesk" release "$out/groceries.csv.gz" "${RELEASE_ARGS[@]}" --out "$out/release-pdf" \
            --report html,pdf 2>&1)" && status=0 || status=$?
  if [ "$status" = 0 ] && pdf_has_words "$work/host/out-$label/release-pdf/privacy-report.pdf"; then
    ok "$label: release with a PDF report (pdftotext finds its words)"
  elif [ "$mode" = bare ] && [ "$status" != 0 ] && one_line_error "$output"; then
    ok "$label: PDF report refused in one line: $output"
  else
    bad "$label: release with a PDF report (status $status): $output"
  fi
}

# window_refused CHROOT LABEL DPDESK PATTERN NOTE: `gui --sample` must fail in one line matching PATTERN
window_refused() {
  local output status
  output="$(run "$1" "$3" gui --sample 2>&1)" && status=0 || status=$?
  if [ "$status" != 0 ] && one_line_error "$output" && printf '%s' "$output" | grep -qE "$4"; then
    ok "$2: window refused in one line$5: ${output:0:160}…"
  else
    bad "$2: window$5 not refused in one line (status $status): $output"
  fi
}

# check_window CHROOT LABEL DPDESK MODE: dpdesk gui --sample on the virtual screen; host mode
# needs the window up (and takes a screenshot), bare mode a one-line refusal
check_window() {
  local chroot_root="$1" label="$2" dpdesk="$3" mode="$4" output status
  if [ "$mode" = bare ]; then
    window_refused "$chroot_root" "$label" "$dpdesk" "apt-get install|glibc 2.34 or newer" ""
    return
  fi
  if [ "$(printf '%s\n' "$glibc" 2.34 | sort -V | head -1)" != 2.34 ]; then
    # older than the pinned Qt's glibc (dpdesk/hostlibs.py QT_GLIBC): the window is refused in one sentence
    window_refused "$chroot_root" "$label" "$dpdesk" "glibc 2.34 or newer" " (glibc $glibc)"
    return
  fi
  run "$chroot_root" timeout 25 "$dpdesk" gui --sample > "$OUT/$label-gui.log" 2>&1 &
  local app=$! mapped=""
  for _ in $(seq 60); do
    if DISPLAY="$display" xwininfo -root -tree 2>/dev/null | grep -q '"dpdesk'; then mapped=1; break; fi
    sleep 0.5
  done
  sleep 4   # the sample loads and the first page draws
  xwdtopnm "$work/fb/Xvfb_screen0" > "$work/screen.pnm" 2>/dev/null || true
  pnmtopng < "$work/screen.pnm" > "$OUT/$label.png" 2>/dev/null || true
  local colours   # a drawn window has many; a blank or black screen one or two
  colours="$(ppmhist -noheader < "$work/screen.pnm" 2>/dev/null | wc -l)"
  wait "$app" && status=0 || status=$?
  if [ -n "$mapped" ] && [ "$status" = 124 ] && ! grep -q Traceback "$OUT/$label-gui.log" && [ "$colours" -gt 50 ]; then
    ok "$label: window up under Xvfb and stayed up ($colours colours on screen; $OUT/$label.png)"
  else
    bad "$label: window (mapped: ${mapped:-no}, status $status, $colours colours): $(tail -3 "$OUT/$label-gui.log")"
  fi
}

for release in "${releases[@]}"; do
  case "$release" in 11) suite=bullseye ;; 12) suite=bookworm ;; 13) suite=trixie ;; 22.04) suite=jammy ;; esac
  system="$(system_name "$suite")"
  tag="$(printf '%s' "$system" | tr 'A-Z ' 'a-z-')"   # debian-11, ubuntu-22.04: labels and screenshots
  echo "$system ($suite)"
  bare="$(make_chroot "$suite" "$suite-bare")"
  host="$(make_chroot "$suite" "$suite-host" $(python3 "$root/dpdesk/hostlibs.py" --packages window) python3-venv)"
  glibc="$(run "$bare" ldd --version 2>/dev/null | sed -n 1p | grep -oE '[0-9]+\.[0-9]+$')"
  python="$(run "$host" python3 --version 2>&1)"
  echo "  glibc $glibc, $python"
  before=$failed
  check_cli "$bare" "$tag-bare-bundle" /mnt/host/bundle/dpdesk/dpdesk bare
  check_window "$bare" "$tag-bare-bundle" /mnt/host/bundle/dpdesk/dpdesk bare
  check_cli "$host" "$tag-bundle" /mnt/host/bundle/dpdesk/dpdesk host
  check_window "$host" "$tag-bundle" /mnt/host/bundle/dpdesk/dpdesk host
  bundle_result=$([ "$failed" = "$before" ] && echo pass || echo FAIL)

  before=$failed
  output="$(run "$host" sh -c 'bash /mnt/host/wheelhouse/install-offline.sh /mnt/host/wheelhouse /tmp/venv' 2>&1)" && status=0 || status=$?
  if [ "$status" = 0 ]; then
    ok "$tag-wheelhouse: install-offline.sh ($(printf '%s\n' "$output" | grep Installed))"
    # the venv lives in the overlay, which the next runs see: the checks run on it
    check_cli "$host" "$tag-wheelhouse" /tmp/venv/bin/dpdesk host
    check_window "$host" "$tag-wheelhouse" /tmp/venv/bin/dpdesk host
    wheel_result=$([ "$failed" = "$before" ] && echo pass || echo FAIL)
  elif one_line_error "$output" && printf '%s' "$output" | grep -q "no Python 3.11, 3.12 or 3.13"; then
    ok "$tag-wheelhouse: refused in one line: ${output:0:150}…"
    wheel_result="not supported ($python)"
  else
    bad "$tag-wheelhouse: install-offline.sh (status $status): $output"
    wheel_result=FAIL
  fi
  summary+=("$system (glibc $glibc, $python): bundle $bundle_result; wheelhouse $wheel_result")
done

echo
echo "Summary ($passed checks passed, $failed failed):"
printf '  %s\n' "${summary[@]}"
echo "Screenshots and outputs: $OUT"
[ "$failed" = 0 ]
