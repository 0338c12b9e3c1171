#!/usr/bin/env bash
# Render resources/icons/dpdesk.svg to the PNG sizes desktops use (the PNGs are committed;
# run this only after changing the SVG). Needs rsvg-convert: apt-get install librsvg2-bin
set -euo pipefail
cd "$(dirname "$0")/../resources/icons"
for size in 16 24 32 48 64 128 256; do
  rsvg-convert --width "$size" --height "$size" dpdesk.svg --output "dpdesk-$size.png"
done
ls -l dpdesk*
