"""docs/ARCHITECTURE.md §1: only dpdesk/gui/ may import Qt (PySide6, pyqtgraph, shiboken, superqt),
with no exception; the rest of dpdesk never imports dpdesk.gui, except the `dpdesk gui` command,
which starts the application."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "dpdesk"
QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "shiboken6", "superqt", "qtpy")
# the one place outside gui/ that may import it: the function behind `dpdesk gui` (the app's entry point)
GUI_LAUNCHER = ("cli.py", "cmd_gui")


def imports(path: Path) -> list[tuple[str, str | None]]:
    """(absolute module name, enclosing function or None) of every import in a module of dpdesk."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]  # e.g. ("dpdesk", "report")
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inside = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Import):
                found.extend((alias.name, function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = list(package[:len(package) - child.level + 1])
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module or ""
                found.append((module, function))
                # `from . import gui` names the module in the alias
                found.extend((f"{module}.{alias.name}", function) for alias in child.names)
            visit(child, inside)

    visit(tree, None)
    return found


def outside_gui():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] != "gui":
            yield path


def test_no_qt_outside_gui():
    offenders = [f"{path.relative_to(PACKAGE.parent)} imports {name}" for path in outside_gui()
                 for name, _ in imports(path) if name.split(".")[0] in QT_MODULES]
    assert not offenders, "Qt imported outside dpdesk/gui/:\n" + "\n".join(offenders)


def test_nothing_outside_gui_imports_the_gui_but_the_launcher():
    offenders = []
    for path in outside_gui():
        for name, function in imports(path):
            if name == "dpdesk.gui" or name.startswith("dpdesk.gui."):
                if (str(path.relative_to(PACKAGE)), function) != GUI_LAUNCHER:
                    offenders.append(f"{path.relative_to(PACKAGE.parent)} imports {name}"
                                     + (f" in {function}()" if function else ""))
    assert not offenders, "dpdesk.gui imported outside dpdesk/gui/:\n" + "\n".join(offenders)


def test_the_check_sees_every_import_form(tmp_path):
    # the scanner must notice all import forms it claims to check, at any depth
    sample = PACKAGE / "report" / "_layering_probe.py"
    sample.write_text("import os\nfrom PySide6 import QtCore\nimport pyqtgraph as pg\n"
                      "def f():\n    from ..gui.app import run_app\n    from .. import gui\n")
    try:
        names = imports(sample)
    finally:
        sample.unlink()
    assert ("PySide6", None) in names and ("pyqtgraph", None) in names
    assert ("dpdesk.gui.app", "f") in names and ("dpdesk.gui", "f") in names


def test_core_and_reports_run_without_loading_qt(tmp_path):
    """Load, release and render both reports (HTML and PDF, with charts): no Qt module gets loaded."""
    code = (
        "import sys, dpdesk, dpdesk.cli, dpdesk.workflow, dpdesk.evaluation.compare, dpdesk.project\n"
        "from dpdesk.report.public import public_report_html\n"
        "from dpdesk.report.internal import internal_report_html\n"
        "from dpdesk.report.pdf import html_to_pdf\n"
        "data = dpdesk.load(sys.argv[1])\n"
        "release = dpdesk.release(dpdesk.declare(data, 'from-data', items_are_public=True), 'lpa', epsilon=1.0, bound=5)\n"
        "html_to_pdf(public_report_html(release, {}))\n"
        "html_to_pdf(internal_report_html(data, release))\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in %r or m.startswith('dpdesk.gui')]\n"
        "backends = [m for m in sys.modules if m.startswith('matplotlib.backends.')"
        " and any(gui in m for gui in ('qt', 'tk', 'gtk', 'wx', 'macosx', 'webagg'))]\n"
        "print(','.join(loaded + backends))\n" % (QT_MODULES,)
    )
    data = PACKAGE.parent / "tests" / "data" / "groceries.csv.gz"
    out = subprocess.run([sys.executable, "-c", code, str(data)], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent, env={"PATH": "/usr/bin:/bin", "MPLCONFIGDIR": str(tmp_path),
                              "DPDESK_HOME": str(tmp_path / "home")})  # the API release is recorded
    assert out.stdout.strip() == "", f"Qt modules or GUI backends loaded by the core: {out.stdout}"
