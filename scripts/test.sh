#!/usr/bin/env bash
# Install everything the tests need and run the whole test suite; a full run (no arguments,
# as CI calls it) then also releases with HTML and PDF reports in a virtual environment
# without Qt (scripts/check-headless.sh), plants the privacy mutants (tests/mutants/run.py:
# every one must be caught) and runs the full-strength privacy audits (-m slow).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
.venv/bin/python -m pytest "$@"
if [ $# -eq 0 ]; then
  bash scripts/check-headless.sh
  .venv/bin/python tests/mutants/run.py
  .venv/bin/python -m pytest -m slow tests/mechanisms
fi
