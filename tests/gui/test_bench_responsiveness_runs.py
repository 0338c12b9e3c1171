"""The responsiveness benchmark (issue 18's measure) still drives the app as it is.

It broke once, silently, when the configure page changed; a small run keeps it honest.
"""
import os
import subprocess
import sys
from pathlib import Path
from tests.gui.conftest import WORK_SECONDS

ROOT = Path(__file__).resolve().parents[2]


def test_the_responsiveness_benchmark_runs_end_to_end(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "DPDESK_HOME": str(tmp_path / "home")}
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_responsiveness.py"),
                          "--rows", "3000", "--repeats", "1", "--dir", str(tmp_path)],
                         env=env, capture_output=True, text=True, timeout=WORK_SECONDS)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "IMPORT (all steps)" in run.stdout and "COMPARISON (all steps)" in run.stdout
    assert "QUIT DURING A COMPARISON" in run.stdout
    assert "= 25 runs" in run.stdout   # 5 mechanisms × 5 ε × 1 repeat, all finished
