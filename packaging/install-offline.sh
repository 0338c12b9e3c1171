#!/usr/bin/env bash
# Install dpdesk from a wheelhouse folder alone: no index, no network.
#
#   bash install-offline.sh [WHEELHOUSE] [VENV]
#
# WHEELHOUSE: the folder build-wheelhouse.sh made (default: the folder this script is in,
#             where build-wheelhouse.sh puts a copy of it).
# VENV:       where to install (default: ~/.local/share/dpdesk-venv); made if missing,
#             upgraded in place if it exists.
# PYTHON:     the Python to use: 3.11, 3.12 or 3.13, the versions the wheelhouse has wheels
#             for (default: python3 if it is one of them, else python3.11, 3.12, 3.13).
# Before installing it says, in one sentence, which Debian packages the desktop window
# still needs on this machine (check-host.py); the command-line commands do without them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -ge 1 ]; then wheelhouse="$1"; else wheelhouse="$here"; fi
venv="${2:-${XDG_DATA_HOME:-$HOME/.local/share}/dpdesk-venv}"

fail() { echo "install-offline: $*" >&2; exit 1; }

[ -f "$wheelhouse/requirements.txt" ] ||
  fail "$wheelhouse is not a wheelhouse (no requirements.txt); make one with packaging/build-wheelhouse.sh."
wheelhouse="$(cd "$wheelhouse" && pwd)"

supported() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] not in [(3, 11), (3, 12), (3, 13)])' 2>/dev/null; }
python="${PYTHON:-}"
if [ -z "$python" ]; then
  for candidate in python3 python3.11 python3.12 python3.13; do
    if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then python="$candidate"; break; fi
  done
  [ -n "$python" ] || fail "no Python 3.11, 3.12 or 3.13 found (python3 is $(python3 --version 2>&1 || echo missing)); install one (Debian 12 and 13: apt-get install python3-venv) or use the standalone bundle, which needs no Python."
fi
command -v "$python" >/dev/null 2>&1 || fail "no $python found; install Python 3.11, 3.12 or 3.13 first."
supported "$python" ||
  fail "the wheels are for Python 3.11, 3.12 and 3.13, but $python is $("$python" --version 2>&1); set PYTHON=/path/to/python3.11 (or 3.12, 3.13)."
"$python" -c 'import venv, ensurepip' 2>/dev/null ||
  fail "$python cannot make virtual environments; install its venv module (as root: apt-get install python3-venv)."
if [ -f "$wheelhouse/check-host.py" ]; then
  if ! needs="$("$python" "$wheelhouse/check-host.py" window)"; then
    echo "install-offline: note: $needs The command-line commands work without them."
  fi
fi

# pip sees the wheelhouse and nothing else: no index, no configuration files, no
# settings from the environment, and a proxy that leads nowhere
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep -E '^PIP_' || true)
export PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9
unset no_proxy NO_PROXY

if [ ! -x "$venv/bin/python" ]; then
  echo "Creating $venv"
  "$python" -m venv "$venv"
fi
echo "Installing dpdesk from $wheelhouse"
"$venv/bin/python" -m pip install --quiet --no-index --find-links "$wheelhouse" \
  --only-binary=:all: --require-hashes --requirement "$wheelhouse/requirements.txt"

version="$("$venv/bin/dpdesk" --version)"
echo "Installed $version: $venv/bin/dpdesk"
echo "Start it with:          $venv/bin/dpdesk"
if [ -f "$here/install-desktop.sh" ]; then
  echo "Add it to the menu with: bash $here/install-desktop.sh $venv/bin/dpdesk"
fi
