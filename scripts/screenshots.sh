#!/usr/bin/env bash
# Capture docs/screenshots/*.png under a virtual X screen (installs Xvfb when missing and root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh screenshots
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1280x800x24" "$py" scripts/screenshots.py "$@"
