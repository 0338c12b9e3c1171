"""Report charts (matplotlib): labelled SVG, the same bytes for the same numbers, and nothing
written outside DPDESK_HOME (matplotlib's font cache included)."""

import os
import subprocess
import sys
from pathlib import Path

from dpdesk.report import charts

REPO = Path(__file__).resolve().parents[2]


def test_a_chart_is_labelled_and_deterministic():
    first = charts.lines([{"label": "lpa", "x": [0.1, 1.0], "y": [10.0, 1.0]}], x_label="ε", y_label="MAE",
                         log_x=True, log_y=True, title="MAE against ε")
    again = charts.lines([{"label": "lpa", "x": [0.1, 1.0], "y": [10.0, 1.0]}], x_label="ε", y_label="MAE",
                         log_x=True, log_y=True, title="MAE against ε")
    assert first == again  # no date, fixed ids: a report can be compared byte for byte
    assert first.startswith('<div class="plot"><svg role="img" aria-label="MAE against ε" ')
    assert "<title>MAE against ε</title>" in first and "<metadata>" not in first and "<?xml" not in first


def test_nothing_is_written_to_the_home_directory(tmp_path):
    home, dpdesk_home = tmp_path / "home", tmp_path / "dpdesk-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    env.update(HOME=str(home), DPDESK_HOME=str(dpdesk_home), PYTHONPATH=str(REPO))
    code = "from dpdesk.report import charts; charts.histogram([1, 2], [0, 1, 2], 'x', 'y')"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert list(home.rglob("*")) == []
    assert (dpdesk_home / "matplotlib").is_dir()
