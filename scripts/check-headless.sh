#!/usr/bin/env bash
# The command line and both reports (HTML and PDF) on a machine without Qt.
#   scripts/check-headless.sh [VENV]
# Makes a fresh virtual environment (VENV, default: a temporary folder) with dpdesk and every
# dependency in pyproject.toml except the desktop application's (PySide6, pyqtgraph), then
# runs a full `dpdesk release … --report html,pdf --internal-report` on the bundled sample and
# checks the files, the PDFs' text, and that Qt is not installed. Only package registries are
# used, through pip's cache (about a minute when the cache is warm). scripts/test.sh runs it
# after the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
venv="${1:-$work/venv}"
# the release the check makes (one variable, so a change of the release options is one edit)
RELEASE_ARGS=(--mechanism gs --epsilon 0.69 --bound 20 --items from-data --items-are-public
              --report html,pdf --internal-report --formats csv,json --chosen-how "chosen before looking at results")
QT_DISTRIBUTIONS="pyside6 pyside6-essentials pyside6-addons shiboken6 pyqtgraph"

start=$SECONDS
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)
# pyproject.toml's dependencies without the Qt ones: dpdesk itself goes in with --no-deps
mapfile -t requirements < <("$venv/bin/python" - "$QT_DISTRIBUTIONS" <<'EOF'
import re, sys, tomllib

qt = set(sys.argv[1].split())
with open("pyproject.toml", "rb") as file:
    dependencies = tomllib.load(file)["project"]["dependencies"]
for requirement in dependencies:
    name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")
    if name not in qt:
        print(requirement)
EOF
)
"${pip[@]}" install "${requirements[@]}"
"${pip[@]}" install --no-deps .
for distribution in $QT_DISTRIBUTIONS; do
  if "$venv/bin/python" -m pip show --quiet "$distribution" >/dev/null 2>&1; then
    echo "check-headless: $distribution is installed in $venv; this check must run without Qt" >&2
    exit 1
  fi
done
echo "check-headless: $(basename "$venv") ready without Qt in $((SECONDS - start)) s (${#requirements[@]} dependencies)"

out="$work/release"
sample="$("$venv/bin/python" -c 'from dpdesk.paths import sample_path; print(sample_path())')"
# no display, no Qt platform, a private ledger; run from elsewhere so the installed dpdesk is used
(cd "$work" && env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM DPDESK_HOME="$work/home" \
   MPLCONFIGDIR="$work/mpl" "$venv/bin/dpdesk" release "$sample" "${RELEASE_ARGS[@]}" --out "$out" \
   --internal-out "$work/internal")

# the internal report never goes into the public folder
expected="privacy-report.html privacy-report.pdf release.csv release.json"
written="$(cd "$out" && ls | sort | tr '\n' ' ' | sed 's/ $//')"
if [ "$written" != "$expected" ]; then
  echo "check-headless: expected the files: $expected; found: $written" >&2
  exit 1
fi
internal_pdf="$(ls "$work"/internal/entry-*-internal-report-NOT-FOR-PUBLICATION.pdf)"
for pdf in "$out/privacy-report.pdf" "$internal_pdf"; do
  head -c 5 "$pdf" | grep -q '%PDF-' || { echo "check-headless: $pdf is not a PDF" >&2; exit 1; }
done
if command -v pdftotext >/dev/null 2>&1; then
  public_text="$(pdftotext "$out/privacy-report.pdf" -)"
  internal_text="$(pdftotext "$internal_pdf" -)"
  [[ "$public_text" == *"What this protects"* ]] \
    || { echo "check-headless: the public PDF has no readable text" >&2; exit 1; }
  [[ "$internal_text" == *"NOT FOR PUBLICATION"* ]] \
    || { echo "check-headless: the internal PDF has no readable text" >&2; exit 1; }
elif [ -n "${CI:-}" ]; then
  echo "check-headless: pdftotext is missing in CI (scripts/system-deps.sh test installs poppler-utils)" >&2
  exit 1
fi
echo "check-headless: release with HTML and PDF reports written without Qt in $((SECONDS - start)) s in all"
