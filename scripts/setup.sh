#!/usr/bin/env bash
# Create .venv in the repository and install dpdesk into it (editable).
#   scripts/setup.sh [test|gui]
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-gui}"
bash scripts/system-deps.sh "$mode"
python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "dpdesk needs Python 3.11 or newer; $("$python" --version 2>&1) found." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
extra=""
[ "$mode" = test ] && extra="[test]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extra}"
