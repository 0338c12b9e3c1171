#!/usr/bin/env bash
# Install the Debian packages dpdesk needs, when they are missing and we are root.
#   scripts/system-deps.sh [test|gui|screenshots]
# test: Qt's libraries for offscreen tests, poppler (PDF → PNG check), sqlite3 (ledger tamper test) and a
#       Java runtime and a PostgreSQL server (engine tests)
# gui:  the same plus the X11/xcb libraries a real window needs
# screenshots: gui plus Xvfb
set -euo pipefail
mode="${1:-test}"
packages=(libgl1 libegl1 libfontconfig1 libxkbcommon0 libglib2.0-0 libdbus-1-3 python3-venv)
if [ "$mode" = test ]; then
  packages+=(poppler-utils sqlite3)
  # a Java runtime for the Spark engine's tests (tests/engine/test_spark.py), unless one is there
  if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
    packages+=(default-jre-headless)
  fi
  # a PostgreSQL server for the database source's tests (tests/engine/test_postgres.py), unless one is there
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
    packages+=(postgresql)
  fi
fi
if [ "$mode" = gui ] || [ "$mode" = screenshots ]; then
  packages+=(libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1
             libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-randr0 fonts-dejavu-core)
fi
if [ "$mode" = screenshots ]; then
  packages+=(xvfb xauth poppler-utils)
fi
command -v dpkg-query >/dev/null 2>&1 || { echo "system-deps: not a Debian system; make sure Qt's libraries are installed." >&2; exit 0; }
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3-venv is only needed when this Python lacks a working venv module
if python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
  missing=("${missing[@]/python3-venv}")
fi
missing=($(printf '%s\n' "${missing[@]}" | sed '/^$/d'))
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "system-deps: missing packages: ${missing[*]} — run as root or: sudo apt-get install ${missing[*]}" >&2
  exit 0
fi
echo "Installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
