#!/usr/bin/env bash
# Add dpdesk to this user's desktop menu (~/.local/share/applications) with its icon.
#
#   bash install-desktop.sh [DPDESK]     DPDESK: the dpdesk program to start: the bundle's
#                                        dpdesk, or VENV/bin/dpdesk of an installation
#                                        (default: the bundle this script sits in, else
#                                        the dpdesk on PATH)
#   bash install-desktop.sh --uninstall  remove the menu entry and the icons
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="${XDG_DATA_HOME:-$HOME/.local/share}"
apps="$data/applications"
theme="$data/icons/hicolor"
sizes=(16 24 32 48 64 128 256)

fail() { echo "install-desktop: $*" >&2; exit 1; }

refresh() {
  if command -v update-desktop-database >/dev/null 2>&1; then update-desktop-database -q "$apps" 2>/dev/null || true; fi
  if command -v gtk-update-icon-cache >/dev/null 2>&1; then gtk-update-icon-cache -q -t "$theme" 2>/dev/null || true; fi
}

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$apps/dpdesk.desktop" "$theme/scalable/apps/dpdesk.svg"
  for size in "${sizes[@]}"; do rm -f "$theme/${size}x${size}/apps/dpdesk.png"; done
  refresh
  echo "Removed dpdesk from the menu."
  exit 0
fi

exe="${1:-}"
if [ -z "$exe" ]; then
  if [ -f "$here/dpdesk" ] && [ -x "$here/dpdesk" ]; then
    exe="$here/dpdesk"                     # this script is inside the bundle
  elif command -v dpdesk >/dev/null 2>&1; then
    exe="$(command -v dpdesk)"
  else
    fail "say which dpdesk to start: bash install-desktop.sh /path/to/dpdesk"
  fi
fi
[ -f "$exe" ] && [ -x "$exe" ] || fail "$exe is not a program."
exe="$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")"
case "$exe" in
  *[\"\`\$\\]*|*$'\n'*) fail "the path $exe has a character a menu entry cannot hold (\" \` \$ \\); move dpdesk elsewhere." ;;
esac
version="$("$exe" --version 2>/dev/null)" || fail "$exe does not run (try: $exe --version)."
case "$version" in dpdesk\ *) ;; *) fail "$exe is not dpdesk (it says: $version)." ;; esac

icons=""
for candidate in "$here/icons" "$here/../resources/icons"; do
  if [ -f "$candidate/dpdesk.svg" ]; then icons="$(cd "$candidate" && pwd)"; break; fi
done
[ -n "$icons" ] || fail "the icons are missing (looked in $here/icons and $here/../resources/icons)."
[ -f "$here/dpdesk.desktop" ] || fail "the menu entry template $here/dpdesk.desktop is missing."

# the Exec key quotes a path with spaces (Desktop Entry Specification, "The Exec key")
exec_path="$exe"
case "$exe" in *[[:space:]]*) exec_path="\"$exe\"" ;; esac

mkdir -p "$apps" "$theme/scalable/apps"
cp "$icons/dpdesk.svg" "$theme/scalable/apps/dpdesk.svg"
for size in "${sizes[@]}"; do
  mkdir -p "$theme/${size}x${size}/apps"
  cp "$icons/dpdesk-$size.png" "$theme/${size}x${size}/apps/dpdesk.png"
done
while IFS= read -r line; do
  case "$line" in
    Exec=*) printf 'Exec=%s gui %%f\n' "$exec_path" ;;
    TryExec=*) printf 'TryExec=%s\n' "$exe" ;;
    *) printf '%s\n' "$line" ;;
  esac
done < "$here/dpdesk.desktop" > "$apps/dpdesk.desktop.tmp"
mv "$apps/dpdesk.desktop.tmp" "$apps/dpdesk.desktop"
if command -v desktop-file-validate >/dev/null 2>&1; then
  # (its hint that Office;Science; may list dpdesk under both menus is the intent)
  report="$(desktop-file-validate "$apps/dpdesk.desktop" 2>&1)" || fail "the menu entry did not validate: $report"
fi
refresh
echo "Added $version to the menu: $apps/dpdesk.desktop (starts $exe)."
