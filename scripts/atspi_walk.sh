#!/usr/bin/env bash
# Walk the app as a screen reader does (scripts/atspi_walk.py): a virtual screen (Xvfb, 1280 × 800) with a
# window manager (openbox), a D-Bus session and the AT-SPI bus; exits 1 if a page has a problem.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh screenshots
extra=()
for p in openbox xdotool python3-pyatspi at-spi2-core dbus; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || extra+=("$p")
done
if [ ${#extra[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "atspi_walk: install ${extra[*]} (apt-get install ${extra[*]}) and run again." >&2
    exit 2
  fi
  apt-get install -y --no-install-recommends "${extra[@]}"
fi
exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c '
  openbox >/dev/null 2>&1 &
  /usr/libexec/at-spi-bus-launcher --launch-immediately >/dev/null 2>&1 &
  sleep 2
  /usr/bin/python3 scripts/atspi_walk.py "$@"
  status=$?
  kill %1 %2 2>/dev/null
  exit $status' atspi_walk "$@"
