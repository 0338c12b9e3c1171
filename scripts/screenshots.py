"""Capture the app's pages, the wizard's steps, the export dialog, the public report, the first-run
guide and the Help window as PNG (docs/screenshots/), in the window a 1280 × 800 screen gives; every
page again in the window of a 1024 × 768 screen with the guide open (small-*.png); then the main
pages, the guide and the Help window in the dark theme (dark-*.png).

Run under a virtual screen:  bash scripts/screenshots.sh   (uses xvfb-run; QT_QPA_PLATFORM=xcb)
Every picture is grabbed from its widget, so QT_QPA_PLATFORM=offscreen works as well.
Uses a temporary DPDESK_HOME so the real budget ledger is never touched (and the first-run guide
shows, as on a first start). The public report's first page is rendered from the exported PDF
with poppler's pdftoppm (-r 60).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["DPDESK_HOME"] = tempfile.mkdtemp(prefix="dpdesk-shots-")
os.environ.setdefault("QT_QPA_PLATFORM", "xcb")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402

from dpdesk.gui import theme  # noqa: E402
from dpdesk.gui.app import make_app  # noqa: E402
from dpdesk.gui.main_window import PAGE_KEYS, PREFERRED_SIZE, MainWindow  # noqa: E402
from dpdesk.gui.release_page import ExportDialog  # noqa: E402
from dpdesk.gui.widgets import fitted_geometry  # noqa: E402
from dpdesk.gui.wizard import ImportWizard  # noqa: E402
from PySide6.QtCore import QRect  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots"
DATA = ROOT / "tests" / "data" / "retail.dat.gz"
app = make_app(theme="light")  # the light pictures look the same whatever the desktop's theme
# the main window as a 1280 × 800 and a 1024 × 768 screen give it (less the window manager's decorations)
LARGE = fitted_geometry(QRect(0, 0, 1280, 800), PREFERRED_SIZE).size()
SMALL = fitted_geometry(QRect(0, 0, 1024, 768), PREFERRED_SIZE).size()


def settle(seconds: float = 0.4) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.02)


def wait_for(condition, timeout: float = 300) -> None:
    end = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > end:
            raise TimeoutError("screenshot step timed out")
        app.processEvents()
        time.sleep(0.02)


def shoot(widget, name: str, whole_screen: bool = False) -> None:
    settle()
    path = OUT / f"{name}.png"
    if whole_screen:
        QGuiApplication.primaryScreen().grabWindow(0).save(str(path))
    else:
        widget.grab().save(str(path))
    print(path)


def report_first_page(pdf: Path, name: str) -> None:
    """The public report's first page as PNG, as a reader sees it (pdftoppm, 60 dpi)."""
    if shutil.which("pdftoppm") is None:
        print("pdftoppm (poppler-utils) is missing: the report's first page is not captured", file=sys.stderr)
        return
    target = OUT / name
    subprocess.run(["pdftoppm", "-r", "60", "-f", "1", "-l", "1", "-singlefile", "-png", str(pdf), str(target)],
                   check=True)
    print(target.with_suffix(".png"))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    window = MainWindow()
    window.resize(LARGE)
    window.show()
    shoot(window, "01-start")
    window.offer_first_run_guide()  # a fresh DPDESK_HOME: the first start
    shoot(window, "16-first-run-guide")
    window.guide.close()
    wizard = ImportWizard(window, str(DATA))
    wizard.show()
    shoot(wizard, "02-wizard-file")
    wizard.next()  # the file's first rows are looked at on a worker; the page moves on when done
    wait_for(lambda: wizard.currentPage() is wizard.format_page)
    shoot(wizard, "03-wizard-format")
    wizard.next()
    shoot(wizard, "04-wizard-mapping")
    wizard.next()
    wait_for(lambda: wizard.dataset is not None)
    shoot(wizard, "05-wizard-summary")
    wizard.next()
    wizard.publication_page.choice.buttons["list"].setChecked(True)
    shoot(wizard, "05b-wizard-publication")
    wizard.publication_page.choice.buttons["public-data"].setChecked(True)
    name, declaration = wizard.publication()
    window.state.set_dataset(wizard.dataset, wizard.settings(), name, declaration)
    wizard.accept()
    shoot(window, "06-data")
    window.steps.setCurrentRow(1)
    configure = window.configure_page
    configure.bound.setValue(20)  # declared: "a basket holds at most 20 products"
    configure.typical.setValue(8)  # declared: "a typical basket holds about 8 products"
    configure.epsilon.preset_buttons["Balanced"].click()
    configure.recommendation.use_button.click()  # the recommendation (gs here), ticked with its settings
    shoot(window, "07-configure")
    window.start_guide().go(1)  # the guide's second step, as a steward who followed it sees it
    shoot(window, "17-first-run-guide-configure")
    window.guide.close()
    window.steps.setCurrentRow(1)
    window.steps.setCurrentRow(2)
    page = window.compare_page  # on the default stand-in: synthetic data shaped by the declared facts
    page.repeats.setValue(5)
    page.run()
    wait_for(lambda: window.state.comparison is not None and not page.task.running)
    shoot(window, "08-compare")
    page.tabs.setCurrentIndex(1)
    shoot(window, "09-compare-true-vs-noisy")
    page.tabs.setCurrentIndex(3)
    index = page.example_choice.findText("gs", Qt.MatchStartsWith)
    page.example_choice.setCurrentIndex(max(index, 0))
    shoot(window, "10-compare-details")
    window.steps.setCurrentRow(3)
    shoot(window, "11-plan")
    window.steps.setCurrentRow(4)
    release_page = window.release_page
    release_page.mechanism.setCurrentIndex(release_page.mechanism.findData("gs"))
    release_page.confirm = lambda text: True  # the confirmation is a standard question box
    release_page.run()
    wait_for(lambda: window.state.release is not None)
    shoot(window, "12-release")
    dialog = ExportDialog(window.state, window)
    dialog.folder.setText(str(Path(os.environ["DPDESK_HOME"]) / "export"))
    dialog.show()
    shoot(dialog, "13-export-dialog")
    dialog.start()
    wait_for(lambda: bool(dialog.written) and not dialog.task.running)
    shoot(dialog, "14-export-done")
    report_first_page(dialog.report_path().with_suffix(".pdf"), "15-report-first-page")
    dialog.close()
    help_window = window.show_help("gs")
    shoot(help_window, "18-help")
    help_window.search.setText("truncation")
    help_window.show_entry("truncation")
    shoot(help_window, "19-help-search")
    help_window.search.clear()
    help_window.hide()
    small_pictures(window)
    dark_pictures(window)
    window.state.dirty = False
    window.close()


def small_pictures(window) -> None:
    """Every page in the window of a 1024 × 768 screen, with the guide open at that page's step."""
    window.resize(SMALL)
    guide = window.start_guide()
    for index, page in enumerate(PAGE_KEYS):
        guide.go(index)
        if page == "compare":
            window.compare_page.tabs.setCurrentIndex(0)
        shoot(window, f"small-{index + 1}-{page}")
    guide.close()
    window.resize(LARGE)


def dark_pictures(window) -> None:
    """The main pages, the wizard, the guide and the Help window in the dark theme (dpdesk gui --theme dark)."""
    theme.apply_theme(app, "dark")
    settle()
    # curves and bars take the palette's colours when drawn: draw them again
    window.data_page.refresh()
    window.compare_page._show_comparison()
    window.plan_page.update()
    window.release_page._show_release()
    window.steps.setCurrentRow(0)
    shoot(window, "dark-06-data")
    wizard = ImportWizard(window, str(DATA))
    wizard.show()
    wizard.next()  # the file is looked at on a worker; the page moves on when done
    wait_for(lambda: wizard.currentPage() is wizard.format_page)
    shoot(wizard, "dark-03-wizard-format")
    wizard.reject()
    window.steps.setCurrentRow(1)
    shoot(window, "dark-07-configure")
    window.steps.setCurrentRow(2)
    window.compare_page.tabs.setCurrentIndex(0)
    shoot(window, "dark-08-compare")
    window.compare_page.tabs.setCurrentIndex(1)
    shoot(window, "dark-09-compare-true-vs-noisy")
    window.steps.setCurrentRow(3)
    shoot(window, "dark-11-plan")
    window.steps.setCurrentRow(4)
    shoot(window, "dark-12-release")
    guide = window.start_guide()
    guide.go(2)
    shoot(window, "dark-16-first-run-guide")
    guide.close()
    help_window = window.show_help("gs")
    shoot(help_window, "dark-18-help")
    help_window.close()


if __name__ == "__main__":
    main()
