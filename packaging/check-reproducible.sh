#!/usr/bin/env bash
# Build the bundle twice from this checkout and check that the two archives are byte-identical
# (the dpdesk wheel's double build is a test in the normal suite: tests/test_offline.py).
#
#   bash packaging/check-reproducible.sh [build-bundle.sh's options]
#
# Each build starts from scratch (no PyInstaller work folder, a new build venv); on a
# difference it lists the files inside the archives that differ. Takes two bundle builds.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$root/dpdesk/__init__.py")"
archive="$here/dist/dpdesk-$version-linux-x86_64.tar.gz"
keep="$(mktemp -d "${TMPDIR:-/tmp}/dpdesk-reproducible.XXXXXX")"
for n in 1 2; do
  echo "--- build $n"
  rm -rf "$here/build" "$here/dist"
  bash "$here/build-bundle.sh" "$@" > "$keep/build-$n.log" 2>&1 || { tail -20 "$keep/build-$n.log"; exit 1; }
  tail -1 "$keep/build-$n.log"
  cp "$archive" "$keep/build-$n.tar.gz"
done
one="$(sha256sum < "$keep/build-1.tar.gz" | cut -d' ' -f1)"
two="$(sha256sum < "$keep/build-2.tar.gz" | cut -d' ' -f1)"
echo "build 1: $one"
echo "build 2: $two"
if [ "$one" = "$two" ]; then
  echo "Reproducible: the two archives are byte-identical ($(du -h "$keep/build-1.tar.gz" | cut -f1))."
  rm -rf "$keep"
  exit 0
fi
mkdir -p "$keep/1" "$keep/2"
tar -C "$keep/1" -xzf "$keep/build-1.tar.gz"
tar -C "$keep/2" -xzf "$keep/build-2.tar.gz"
echo "NOT reproducible; files that differ (archives and logs kept in $keep):"
diff -rq "$keep/1" "$keep/2" | head -50
exit 1
