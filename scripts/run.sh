#!/usr/bin/env bash
# Install dpdesk and start the app on the bundled sample dataset.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh gui
exec .venv/bin/dpdesk gui --sample "$@"
