"""Walk dpdesk as a screen reader does (AT-SPI) on each of its five pages, and press Tab through them.

    bash scripts/atspi_walk.sh        # Xvfb, a window manager, a D-Bus session and the AT-SPI bus

With the sample loaded and named, Δ and a typical row length declared, the recommendation used, a
comparison drawn and the first-run guide open, on every page it checks what a screen-reader user meets:

* every control that takes the keyboard focus (button, check box, radio button, combo box, spin box,
  text field, slider, list, table, tab, scroll pane) has a name, and no name is an internal code
  ("list", "public-data");
* every text a label shows reaches the screen reader (a label whose name replaced its content hid it:
  the app lists its labels' texts, as Qt has them, for the walker to find);
* every plot has a description (its text alternative; the Numbers button shows its values);
* Tab leaves every table and comes back round to the steps list (no focus trap), and Shift+Tab too.

It prints what it walked and every problem, and exits 1 if there is any. Two processes: this one (the
system's Python, with pyatspi: apt-get install python3-pyatspi at-spi2-core) walks; the app runs under
dpdesk's own Python (``--app``), which writes ``ready`` in its DPDESK_HOME once it is set up.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["① Data", "② Configure", "③ Compare", "④ Plan", "⑤ Release"]
FOCUSABLE_ROLES = {"push button", "toggle button", "check box", "radio button", "combo box", "spin button",
                   "text", "entry", "password text", "slider", "list", "table", "tree", "tree table",
                   "page tab", "page tab list", "scroll pane"}
CODE_LIKE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")  # "list", "public-data": an internal id, not words
TABS_PER_PAGE = 160


# --- the app, in dpdesk's own Python -----------------------------------------------------------------

def run_app() -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QTextDocument
    from PySide6.QtWidgets import QLabel

    from dpdesk.loading import load
    from dpdesk.data.domain import DomainDeclaration
    from dpdesk.gui.app import make_app
    from dpdesk.gui.main_window import PAGE_KEYS, MainWindow
    from dpdesk.paths import sample_path, user_data_dir

    def plain(label) -> str:
        document = QTextDocument()
        document.setHtml(label.text())
        return normal(document.toPlainText() if "<" in label.text() else label.text())

    app = make_app(theme="light")
    window = MainWindow()
    window.show()
    data = load(sample_path())
    window.state.set_dataset(data, {"path": str(sample_path()), "format": "transactions"}, "groceries",
                             DomainDeclaration("public-data"))
    window.state.set_bound(20)
    window.state.set_typical_row_length(4)
    window.configure_page.use_recommendation()
    page = window.compare_page
    page.repeats.setValue(2)
    page.run()

    def ready():
        window.start_guide()
        # what each page shows in its labels, as Qt has it: the walker checks a screen reader gets the same
        shown = {}
        for index, key in enumerate(PAGE_KEYS):
            window.show_page(key)  # the guide stays at its first step, as the walker leaves it
            app.processEvents()
            shown[PAGES[index]] = [plain(label) for label in window.findChildren(QLabel)
                                   if label.isVisible() and label.window() is window and plain(label)]
        window.show_page("data")
        window.steps.setFocus()
        (user_data_dir() / "labels.json").write_text(json.dumps(shown), encoding="utf-8")
        (user_data_dir() / "ready").write_text("ready")

    page.task.finished.connect(lambda: QTimer.singleShot(500, ready))
    return app.exec()


# --- the walker, with pyatspi ------------------------------------------------------------------------

def normal(text: str) -> str:
    """Text as compared: without invisible break opportunities, whitespace collapsed."""
    return " ".join(text.replace("\u200b", "").split())


def key(*keys: str) -> None:
    subprocess.run(["xdotool", "key", "--clearmodifiers", *keys], check=True)
    time.sleep(0.15)


def states(node) -> set:
    import pyatspi

    found = node.getState()
    return {name for name, state in (("showing", pyatspi.STATE_SHOWING), ("focusable", pyatspi.STATE_FOCUSABLE),
                                     ("enabled", pyatspi.STATE_ENABLED), ("focused", pyatspi.STATE_FOCUSED),
                                     ("visible", pyatspi.STATE_VISIBLE)) if found.contains(state)}


def labelled(node) -> bool:
    """Whether a label names the object (the labelled-by relation)."""
    import pyatspi

    try:
        return any(relation.getRelationType() == pyatspi.RELATION_LABELLED_BY for relation in node.getRelationSet())
    except Exception:  # noqa: BLE001
        return False


def text_of(node) -> str:
    try:
        text = node.queryText()
        return text.getText(0, -1)
    except NotImplementedError:
        return ""
    except Exception:  # noqa: BLE001 - no Text interface
        return ""


def walk(node, seen: list, path=()) -> None:
    """Every showing object below ``node`` (table cells left out: a table is checked as one control)."""
    for index in range(node.childCount):
        child = node.getChildAtIndex(index)
        if child is None:
            continue
        try:
            role, found = child.getRoleName(), states(child)
        except Exception:  # noqa: BLE001 - gone meanwhile
            continue
        if "showing" not in found:
            continue
        seen.append((child, role, found, path))
        if role in ("table", "tree", "tree table", "list"):
            continue
        walk(child, seen, path + (role,))


def focused(app) -> tuple[str, str, tuple]:
    """(role, name, the roles above it) of the object with the keyboard focus."""
    stack = [(app, ())]
    while stack:
        node, path = stack.pop()
        for index in range(node.childCount):
            child = node.getChildAtIndex(index)
            if child is None:
                continue
            try:
                found, role = states(child), child.getRoleName()
            except Exception:  # noqa: BLE001
                continue
            if "showing" not in found:
                continue
            if "focused" in found:
                return role, child.name or "", path
            stack.append((child, path + ((role, child.name or ""),)))
    return "", "", ()


def check_page(app, page: str, labels: list[str]) -> list[str]:
    problems = []
    seen = []
    walk(app, seen)
    # every text a label shows reaches the screen reader (as a label's name or text)
    heard = {normal(node.name or "") for node, *_ in seen} | {normal(text_of(node)) for node, *_ in seen}
    for text in labels:
        if text not in heard:
            problems.append(f"{page}: a label shows '{text[:60]}' but a screen reader does not get that text")
    counts = {"controls": 0, "labels": 0, "plots": 0}
    for node, role, found, _path in seen:
        name = (node.name or "").strip()
        if role in FOCUSABLE_ROLES and "focusable" in found and "enabled" in found:
            counts["controls"] += 1
            if role == "combo box":
                # Qt reads a combo box's value as its name: what it is for comes from the label naming it
                if not labelled(node):
                    problems.append(f"{page}: the combo box showing '{name[:40]}' has no label naming it")
                continue
            if not name:
                parent = node.parent
                problems.append(f"{page}: a {role} has no name (in a {parent.getRoleName()} named "
                                f"'{parent.name or ''}')")
            elif CODE_LIKE.match(name) and role != "text":
                problems.append(f"{page}: a {role} is named with an internal code: '{name}'")
        if role == "label":
            counts["labels"] += 1
        if role in ("filler", "canvas", "image") and name.startswith("Plot"):
            counts["plots"] += 1
            if not (node.description or "").strip():
                problems.append(f"{page}: the plot '{name}' has no description (text alternative)")
    print(f"{page}: {len(seen)} objects showing, {counts['controls']} focusable controls, {counts['labels']} "
          f"labels, {counts['plots']} plots")
    return problems


def check_tab(app, page: str, direction: str) -> list[str]:
    """Tab (or Shift+Tab) from the steps list until focus comes back to it: never stuck in one table."""
    key("ctrl+" + str(PAGES.index(page) + 1))
    start = focused(app)
    visited, run, last_table = [], 0, None
    for _press in range(TABS_PER_PAGE):
        key(direction)
        role, name, path = focused(app)
        visited.append((role, name))
        table = next((n for r, n in reversed(path) if r in ("table", "tree", "tree table")), None) \
            if role in ("table cell", "table", "tree item") else None
        table = table or (name if role in ("table", "tree") else None)
        run = run + 1 if table is not None and table == last_table else 0
        last_table = table
        if run >= 3:
            return [f"{page}: {direction} is trapped in the table '{table}' (focus stays on its cells)"]
        if (role, name) == start[:2] and len(visited) > 1:
            print(f"{page}: {direction} went round {len(visited)} controls and back to the steps list")
            return []
    return [f"{page}: {direction} did not come back to the steps list within {TABS_PER_PAGE} presses "
            f"(last: {visited[-5:]})"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.app:
        return run_app()
    import pyatspi

    home = Path(tempfile.mkdtemp(prefix="dpdesk-atspi-"))
    python = ROOT / ".venv" / "bin" / "python"
    env = dict(os.environ, QT_ACCESSIBILITY="1", QT_LINUX_ACCESSIBILITY_ALWAYS_ON="1", QT_QPA_PLATFORM="xcb",
               DPDESK_HOME=str(home))
    child = subprocess.Popen([str(python if python.exists() else sys.executable), str(Path(__file__).resolve()),
                              "--app"], env=env, cwd=ROOT)
    try:
        deadline = time.time() + 300
        while not (home / "ready").exists():
            if time.time() > deadline or child.poll() is not None:
                print("the app did not start (or never got ready)", file=sys.stderr)
                return 1
            time.sleep(0.5)
        desktop = pyatspi.Registry.getDesktop(0)
        app = next((desktop.getChildAtIndex(i) for i in range(desktop.childCount)
                    if desktop.getChildAtIndex(i) is not None
                    and desktop.getChildAtIndex(i).get_process_id() == child.pid), None)
        if app is None:
            print("the app is not on the accessibility bus (QT_ACCESSIBILITY, at-spi2-core?)", file=sys.stderr)
            return 1
        labels = json.loads((home / "labels.json").read_text(encoding="utf-8"))
        problems = []
        for index, page in enumerate(PAGES):
            key(f"ctrl+{index + 1}")
            time.sleep(0.5)
            problems += check_page(app, page, labels.get(page, []))
            problems += check_tab(app, page, "Tab")
            problems += check_tab(app, page, "shift+Tab")
        for problem in problems:
            print("PROBLEM:", problem)
        print("no problems" if not problems else f"{len(problems)} problems")
        return 1 if problems else 0
    finally:
        child.terminate()
        child.wait(30)


if __name__ == "__main__":
    sys.exit(main())
