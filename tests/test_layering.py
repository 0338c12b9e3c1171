"""DESIGN.md §1: only dpdesk/gui/ may import Qt (PySide6, pyqtgraph, shiboken, superqt)."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "dpdesk"
QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "shiboken6", "superqt", "qtpy")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_qt_outside_gui():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "gui" in path.relative_to(PACKAGE).parts[:1]:
            continue
        for name in imported_modules(path):
            if name.split(".")[0] in QT_MODULES:
                offenders.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert not offenders, "Qt imported outside dpdesk/gui/:\n" + "\n".join(offenders)


def test_the_check_sees_a_qt_import(tmp_path):
    # the scanner must notice all import forms it claims to check
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom PySide6 import QtCore\nimport pyqtgraph as pg\n")
    assert {"PySide6", "pyqtgraph"} <= imported_modules(sample)


def test_core_runs_without_loading_qt():
    code = (
        "import sys, dpdesk, dpdesk.cli, dpdesk.workflow, dpdesk.evaluation.compare, dpdesk.project\n"
        "dpdesk.mechanisms()\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in %r]\n"
        "print(','.join(loaded))\n" % (QT_MODULES,)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"Qt modules loaded by the core: {out.stdout}"
