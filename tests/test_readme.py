"""The README's first command-line release works when pasted into a shell, as written."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MARKER = "<!-- tests/test_readme.py pastes this block into bash -->"


def pasted_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    after = text.split(MARKER, 1)[1]
    return re.match(r"\s*```bash\n(.*?)```", after, re.S).group(1)


def test_the_block_is_three_lines_of_dpdesk():
    lines = pasted_block().strip().splitlines()
    assert len(lines) == 3 and lines[0] == "source .venv/bin/activate"
    assert all(line.startswith("dpdesk ") for line in lines[1:])


def test_pasting_the_first_release_works(tmp_path):
    venv = Path(sys.prefix)
    if not (venv / "bin" / "activate").is_file() or not (venv / "bin" / "dpdesk").is_file():
        pytest.skip("not running from a virtual environment with dpdesk installed (scripts/setup.sh makes one)")
    # the repository folder as the README's reader has it, but with the release written here
    work = tmp_path / "repository"
    work.mkdir()
    (work / ".venv").symlink_to(venv)
    (work / "resources").symlink_to(REPO / "resources")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["DPDESK_HOME"] = str(tmp_path / "home")
    result = subprocess.run(["bash", "-e"], input=pasted_block(), cwd=work, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "9,835" in result.stdout  # inspect: the sample's baskets
    written = sorted(p.name for p in (work / "first-release").iterdir())
    assert written == ["privacy-report.html", "privacy-report.pdf", "release.csv", "release.json"]
