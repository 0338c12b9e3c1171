#!/usr/bin/env bash
# Put together what a steward carries to a secured machine, with one checksum file over all
# of it and a signature:
#
#   DPDESK_SIGNING_KEY=/path/to/dpdesk-release bash packaging/make-release.sh [OPTIONS] [OUT]
#
# OUT (default packaging/release) gets the folder dpdesk-VERSION/ with
#   dpdesk-VERSION-linux-x86_64.tar.gz   the standalone bundle (build-bundle.sh)
#   dpdesk-VERSION-windows-x86_64.zip    the portable Windows folder (build-windows.sh)
#   wheelhouse/                          the wheels, requirements.txt and scripts (build-wheelhouse.sh)
#   SHA256SUMS                           every file above: `sha256sum -c SHA256SUMS` in dpdesk-VERSION/
#   SHA256SUMS.sig                       its OpenSSH signature (sign-release.sh), if DPDESK_SIGNING_KEY is set
# OPTIONS: --wheelhouse DIR (use a built wheelhouse), --bundle ARCHIVE (use a built bundle
# archive), --no-bundle (no Linux bundle), --windows ZIP (use a built Windows zip),
# --no-windows (no Windows zip). Otherwise all three are built (needs the network).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
source "$here/lib.sh"
wheelhouse="" bundle="" with_bundle=1 windows="" with_windows=1 out="$here/release"
while [ $# -gt 0 ]; do
  case "$1" in
    --wheelhouse) wheelhouse="$(cd "$2" && pwd)"; shift 2 ;;
    --bundle) bundle="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    --no-bundle) with_bundle=0; shift ;;
    --windows) windows="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    --no-windows) with_windows=0; shift ;;
    -*) echo "make-release: unknown option $1" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$root/dpdesk/__init__.py")"
release="$out/dpdesk-$version"
rm -rf "$release"
mkdir -p "$release"

if [ -n "$wheelhouse" ]; then
  # hard links where possible: a release folder next to its wheelhouse costs no space
  cp -al "$wheelhouse" "$release/wheelhouse" 2>/dev/null || cp -a "$wheelhouse" "$release/wheelhouse"
else
  bash "$here/build-wheelhouse.sh" "$release/wheelhouse"
fi
if [ "$with_bundle" = 1 ]; then
  if [ -z "$bundle" ]; then
    bash "$here/build-bundle.sh"
    bundle="$here/dist/dpdesk-$version-linux-x86_64.tar.gz"
  fi
  cp "$bundle" "$release/"
fi
if [ "$with_windows" = 1 ]; then
  if [ -z "$windows" ]; then
    bash "$here/build-windows.sh"
    windows="$here/dist/dpdesk-$version-windows-x86_64.zip"
  fi
  cp "$windows" "$release/"
fi
write_sha256sums "$release"
if [ -n "${DPDESK_SIGNING_KEY:-}" ]; then
  bash "$here/sign-release.sh" "$release"
else
  echo "make-release: DPDESK_SIGNING_KEY is not set, so $release/SHA256SUMS is not signed." >&2
fi
echo "Release: $release ($(wc -l < "$release/SHA256SUMS") files, $(du -sh "$release" | cut -f1))"
