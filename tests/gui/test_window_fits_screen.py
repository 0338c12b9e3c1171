"""The main window opens inside the screen's available area, whatever the screen's size.

Each case starts a fresh Qt process on the offscreen platform with a screen of the given
size (the platform's configuration file), opens the real MainWindow and reports its frame
and the screen's available geometry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.gui.conftest import WORK_SECONDS

OPEN_WINDOW = """
import json, sys
from dpdesk.gui.app import make_app
from dpdesk.gui.main_window import MainWindow
app = make_app()
window = MainWindow()
window.show()
if sys.argv[1:] == ["help"]:
    window = window.show_help()  # the Help window: never taller than the screen either (issue 31)
app.processEvents()
screen = window.screen().availableGeometry()
frame = window.frameGeometry()
print(json.dumps({"screen": [screen.x(), screen.y(), screen.width(), screen.height()],
                  "frame": [frame.x(), frame.y(), frame.width(), frame.height()]}))
"""


def opened_on_a_screen(tmp_path, width: int, height: int, *args) -> tuple:
    """(screen's available x, y, w, h), (window frame's x, y, w, h) in a fresh Qt on a screen of that size."""
    config = tmp_path / "screens.json"
    config.write_text(json.dumps({"windowFrameMargins": True, "screens": [
        {"name": "small", "x": 0, "y": 0, "width": width, "height": height, "logicalDpi": 96, "dpr": 1}]}))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}", "DPDESK_HOME": str(tmp_path / "home")}
    run = subprocess.run([sys.executable, "-c", OPEN_WINDOW, *args], env=env, capture_output=True, text=True,
                         timeout=WORK_SECONDS)
    assert run.returncode == 0, run.stderr
    geometry = json.loads(run.stdout.strip().splitlines()[-1])
    return geometry["screen"], geometry["frame"]


@pytest.mark.parametrize("width, height", [(1280, 800), (1366, 768), (1024, 600), (1920, 1080)])
def test_main_window_fits_the_available_screen(tmp_path, width, height):
    (sx, sy, sw, sh), (fx, fy, fw, fh) = opened_on_a_screen(tmp_path, width, height)
    geometry = (sx, sy, sw, sh), (fx, fy, fw, fh)
    assert (sw, sh) == (width, height)   # the configured screen is the one Qt used
    assert sx <= fx and sy <= fy and fx + fw <= sx + sw and fy + fh <= sy + sh, geometry
    if width >= 1366:   # room to spare: the window is not shrunk for nothing
        assert fw >= min(1280, sw - 16) and fh >= min(820, sh - 48), geometry


@pytest.mark.parametrize("width, height", [(1280, 800), (1024, 600)])
def test_the_help_window_fits_the_available_screen(tmp_path, width, height):
    (sx, sy, sw, sh), (fx, fy, fw, fh) = opened_on_a_screen(tmp_path, width, height, "help")
    assert sx <= fx and sy <= fy and fx + fw <= sx + sw and fy + fh <= sy + sh, ((sx, sy, sw, sh), (fx, fy, fw, fh))
