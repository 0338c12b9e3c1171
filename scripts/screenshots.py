"""Capture the app's pages, the wizard's steps, the export dialog and the public report as PNG (docs/screenshots/).

Run under a virtual screen:  bash scripts/screenshots.sh   (uses xvfb-run; QT_QPA_PLATFORM=xcb)
Uses a temporary DPDESK_HOME so the real budget ledger is never touched. The public report's
first page is rendered from the exported PDF with poppler's pdftoppm (-r 60).
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

from dpdesk.gui.app import make_app  # noqa: E402
from dpdesk.gui.main_window import MainWindow  # noqa: E402
from dpdesk.gui.release_page import ExportDialog  # noqa: E402
from dpdesk.gui.wizard import ImportWizard  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots"
DATA = ROOT / "tests" / "data" / "retail.dat.gz"
app = make_app()


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
    window.resize(1280, 860)
    window.show()
    shoot(window, "01-start")
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
    window.state.dirty = False
    window.close()


if __name__ == "__main__":
    main()
