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


# --- one direction (issue #32): floors, no circle, no private name across packages ----------------------

#: the floors of dpdesk, bottom first (docs/ARCHITECTURE.md §1): a module imports only from its own floor
#: or the floors below. Modules on one floor may import each other, but never in a circle.
FLOORS = (
    ("base", ("dpdesk.errors", "dpdesk.tasks", "dpdesk.paths", "dpdesk.locks", "dpdesk.hostlibs", "dpdesk.arrays",
              "dpdesk.logfile")),
    ("privacy core", ("dpdesk.privacy",)),
    ("data", ("dpdesk.data",)),
    ("engine", ("dpdesk.engine",)),
    ("front door", ("dpdesk.loading",)),
    ("mechanisms", ("dpdesk.mechanisms",)),
    ("evaluation", ("dpdesk.evaluation",)),
    ("report", ("dpdesk.report",)),
    ("the steward's steps", ("dpdesk.guidance", "dpdesk.project", "dpdesk.workflow")),
    ("front ends", ("dpdesk.api", "dpdesk.cli")),
    ("gui", ("dpdesk.gui",)),
    ("package face", ("dpdesk",)),
)
def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph() -> dict[str, dict[str, list[str]]]:
    """importer → {imported dpdesk module: [names taken]}, for every import at any depth.

    ``from package import name`` is an import of the module ``package.name`` when that is a
    module, else of ``package`` (whose name ``name`` is taken)."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, dict[str, list[str]]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found: dict[str, list[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "dpdesk":
                        found.setdefault(alias.name, [])
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else (node.module or "")
                if base.split(".")[0] != "dpdesk":
                    continue
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    if target in modules:
                        found.setdefault(target, [])
                    else:
                        found.setdefault(base, []).append(alias.name)
        found.pop(name, None)
        graph[name] = found
    return graph


def floor_of(module: str) -> int:
    best, where = -1, None
    for number, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, where = len(prefix), number
    assert where is not None, f"{module} is on no floor: add it to FLOORS"
    return where


def the_version_only(names: list[str]) -> bool:
    return bool(names) and all(n == "__version__" for n in names)


def test_imports_only_go_down_the_floors():
    upward = []
    for importer, targets in module_graph().items():
        for target, names in targets.items():
            if target == "dpdesk" and the_version_only(names):
                continue  # the package face's version constant
            if (importer, "dpdesk.gui") == ("dpdesk.cli", target) or importer == "dpdesk.cli" and \
                    target.startswith("dpdesk.gui."):
                continue  # `dpdesk gui` starts the app (test_nothing_outside_gui_imports_the_gui_but_the_launcher)
            if floor_of(target) > floor_of(importer):
                upward.append(f"{importer} ({FLOORS[floor_of(importer)][0]}) imports {target} "
                              f"({FLOORS[floor_of(target)][0]})")
    assert not upward, "imports that run up a floor:\n" + "\n".join(sorted(upward))


def circles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module), Tarjan's way."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    """Not even inside the GUI: its pages import widgets, never the application that opens them."""
    graph = module_graph()
    kept = {importer: {t: n for t, n in targets.items() if not (t == "dpdesk" and the_version_only(n))}
            for importer, targets in graph.items()}
    found = circles(kept)
    assert not found, "import circles:\n" + "\n".join(" → ".join(c) for c in found)


def test_the_circle_check_sees_a_circle():
    graph = {"a": {"b": []}, "b": {"c": []}, "c": {"a": []}, "d": {"a": []}}
    assert circles(graph) == [["a", "b", "c"]]


def test_no_private_name_crosses_a_package():
    crossing = []
    for importer, targets in module_graph().items():
        home = importer.split(".")[:2]
        for target, names in targets.items():
            private = [n for n in names if n.startswith("_") and n != "__version__"]
            if target.split(".")[-1].startswith("_") and not target.endswith("__init__"):
                private.append(target)
            if private and target.split(".")[:2] != home:
                crossing.append(f"{importer} takes {', '.join(private)} from {target}")
    assert not crossing, "private names used outside their package:\n" + "\n".join(sorted(crossing))


def test_the_data_draws_no_noise():
    """Private discovery is a privacy step beside the mechanisms (mechanisms/discovery.py): nothing in
    dpdesk.data draws noise or randomness; it may only split rows for bounding (an algorithm on rows)."""
    drawing = ("dpdesk.privacy.noise", "dpdesk.privacy.randomness", "dpdesk.privacy.exponential",
               "dpdesk.privacy.exact", "dpdesk.mechanisms")
    found = [f"{importer} imports {target}" for importer, targets in module_graph().items()
             if importer.startswith("dpdesk.data") for target in targets if target.startswith(drawing)]
    assert not found, "\n".join(found)


def test_the_front_door_keeps_its_old_public_names_and_nothing_inside_uses_them():
    """``dpdesk.data.load`` and ``dpdesk.data.reload`` are public names scripts rely on; they resolve to the front
    door a floor above (``dpdesk.loading``), and no module of dpdesk takes them from the data floor."""
    import dpdesk.data
    import dpdesk.loading

    assert dpdesk.data.load is dpdesk.loading.load and dpdesk.data.reload is dpdesk.loading.reload
    assert {"load", "reload"} <= set(dpdesk.data.__all__)
    users = [importer for importer, targets in module_graph().items()
             if set(targets.get("dpdesk.data", [])) & {"load", "reload"}]
    assert not users, f"take the front door from dpdesk.loading: {users}"
