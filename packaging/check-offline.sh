#!/usr/bin/env bash
# The offline installation check (tests/test_offline.py runs it in CI):
#
#   bash packaging/check-offline.sh [WHEELHOUSE]
#
# Without WHEELHOUSE it first builds one with build-wheelhouse.sh into a temporary folder
# (that step needs the package registry). Then, with the network unavailable, it installs
# from the wheelhouse alone into a fresh virtual environment (install-offline.sh) and runs
# from outside the checkout, with a temporary DPDESK_HOME:
#   dpdesk --version; dpdesk inspect on the installed sample; a headless release
#   (csv, json, parquet, html and pdf report); dpdesk ledger verify; dpdesk inspect on an Excel
#   workbook and an SPSS file (openpyxl and pyreadstat, written there); the main window
#   offscreen; and checks that all of it came from the virtual environment.
# The network is unavailable through a network namespace with no interfaces but loopback
# (unshare --net) where the system allows one, and to pip in any case: no index, no pip
# configuration, a proxy that leads nowhere. KEEP=1 keeps the temporary folder.
# PYTHON: the Python 3.11 for the virtual environment (install-offline.sh's default).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/dpdesk-offline.XXXXXX")"
if [ "${KEEP:-0}" = 1 ]; then echo "Working in $work (kept)"; else trap 'rm -rf "$work"' EXIT; fi
step() { echo "--- $*"; }

if [ $# -ge 1 ]; then
  wheelhouse="$(cd "$1" && pwd)"
else
  step "building the wheelhouse"
  bash "$here/build-wheelhouse.sh" "$work/wheelhouse"
  wheelhouse="$work/wheelhouse"
fi

if unshare --net true 2>/dev/null; then
  offline=(unshare --net)
  how="in a network namespace without network (unshare --net) and with pip cut off from any index"
elif unshare --map-root-user --net true 2>/dev/null; then
  offline=(unshare --map-root-user --net)
  how="in a network namespace without network (unshare --map-root-user --net) and with pip cut off from any index"
else
  offline=(env)
  how="with pip cut off from any index (no network namespace can be made here)"
fi
# the release every check makes: ONE place for its arguments
RELEASE_ARGS=(--mechanism lpa --epsilon 0.69 --bound 20 --items from-data --items-are-public)
dead=http://127.0.0.1:9
offline+=(env -u PYTHONPATH -u DISPLAY -u WAYLAND_DISPLAY
          PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null http_proxy=$dead https_proxy=$dead HTTP_PROXY=$dead HTTPS_PROXY=$dead
          DPDESK_HOME="$work/home" QT_QPA_PLATFORM=offscreen)
venv="$work/venv"
cd "$work"   # nothing of the checkout on the path

step "installing $how"
"${offline[@]}" bash "$wheelhouse/install-offline.sh" "$wheelhouse" "$venv"
if [ "${offline[0]}" = unshare ]; then
  "${offline[@]}" "$venv/bin/python" -c '
import socket, sys
names = sorted(name for _, name in socket.if_nameindex())
print("network interfaces during the check:", ", ".join(names))
sys.exit(names != ["lo"])'
fi
# pip in this environment has nowhere to download from (a control: this must fail)
if "${offline[@]}" "$venv/bin/python" -m pip download --quiet --no-deps --dest "$work/control" tzdata >/dev/null 2>&1; then
  echo "check-offline: pip could still download a package: the network is not cut off" >&2
  exit 1
fi

dpdesk=("${offline[@]}" "$venv/bin/dpdesk")
step "dpdesk --version"
version="$("${dpdesk[@]}" --version)"
echo "$version"
expected="dpdesk $(ls "$wheelhouse"/dpdesk-*.whl | head -1 | xargs basename | cut -d- -f2)"
[ "$version" = "$expected" ] || { echo "check-offline: expected '$expected', got '$version'" >&2; exit 1; }

sample="$("${offline[@]}" "$venv/bin/python" -c 'from dpdesk.paths import sample_path; print(sample_path())')"
step "dpdesk inspect $sample"
"${dpdesk[@]}" inspect "$sample"
"${dpdesk[@]}" inspect --json "$sample" > "$work/inspect.json"

step "dpdesk release (headless)"
"${dpdesk[@]}" release "$sample" "${RELEASE_ARGS[@]}" --out "$work/release" \
  --formats csv,json,parquet --report html,pdf
"${dpdesk[@]}" ledger verify

step "checking the results"
"${offline[@]}" "$venv/bin/python" - "$venv" "$work" <<'PY'
import csv, json, sys
from pathlib import Path

import pyarrow.parquet as pq

import dpdesk
from dpdesk.paths import resources_dir, sample_path

venv, work = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
for what, path in [("dpdesk", Path(dpdesk.__file__)), ("the sample", sample_path()),
                   ("the report stylesheet", resources_dir() / "report" / "report.css"),
                   ("the icon", resources_dir() / "icons" / "dpdesk-256.png"),
                   ("the recommendation rule", resources_dir() / "recommend" / "rule.json")]:
    assert path.is_file() and path.resolve().is_relative_to(venv), f"{what} is not from the virtual environment: {path}"
figures = json.loads((work / "inspect.json").read_text())
assert (figures["rows"], figures["columns"]) == (9835, 169), figures
out = work / "release"
release = json.loads((out / "release.json").read_text())
assert release["epsilon"] == 0.69 and release["mode"] == "release", release
assert len(release["values"]) == figures["columns"], len(release["values"])
with open(out / "release.csv", newline="", encoding="utf-8") as f:
    rows = list(csv.reader(f))
assert rows[0] == ["item", "noisy_count", "margin95"] and len(rows) == figures["columns"] + 1, rows[:2]
assert pq.read_table(out / "release.parquet").num_rows == figures["columns"]
assert (out / "privacy-report.pdf").read_bytes().startswith(b"%PDF")
assert "ε" in (out / "privacy-report.html").read_text(encoding="utf-8")
print(f"release: {len(rows) - 1} noisy counts at ε = {release['epsilon']}, csv/json/parquet/html/pdf written")
PY

step "dpdesk inspect on an Excel workbook and an SPSS file (openpyxl and pyreadstat from the wheelhouse)"
"${offline[@]}" "$venv/bin/python" - "$work" <<'PY'
import sys
from pathlib import Path
import openpyxl, pandas as pd, pyreadstat
work = Path(sys.argv[1])
book = openpyxl.Workbook()
book.active.append(["person", "item"])
for person, item in [("Zoë", "café"), ("Zoë", "thé"), ("Åsa", "café")]:
    book.active.append([person, item])
book.save(work / "small.xlsx")
pyreadstat.write_sav(pd.DataFrame({"person": [1.0, 1.0, 2.0], "item": [1.0, 2.0, 1.0]}), work / "small.sav",
                     variable_value_labels={"item": {1: "café", 2: "thé"}})
PY
for file in small.xlsx small.sav; do
  "${dpdesk[@]}" inspect "$work/$file" --format pairs --json > "$work/$file.json"
  grep -q '"rows": 2, "columns": 2, "nonzeros": 3' "$work/$file.json" \
    || { echo "check-offline: dpdesk inspect $file: $(cat "$work/$file.json")" >&2; exit 1; }
  echo "$file: 2 people, 2 items, 3 non-zeros"
done

step "the main window, offscreen"
"${offline[@]}" "$venv/bin/python" -c '
from dpdesk.gui.app import make_app
from dpdesk.gui.main_window import MainWindow
app = make_app()
window = MainWindow()
window.show()
app.processEvents()
assert not app.windowIcon().isNull(), "no window icon"
print("main window opened:", repr(window.windowTitle()))
window.close()'

echo "Offline install check passed: $version installed from $wheelhouse $how."
