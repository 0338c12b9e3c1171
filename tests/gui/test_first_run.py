"""The first-run guide: shown on the first start only (remembered in DPDESK_HOME's settings.ini),
five steps that switch to each page and outline its controls, skippable, reachable from Help;
and the status bar's next step, which follows the page and the steward's progress."""

import configparser
import sys

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

import dpdesk
from dpdesk import guidance
from dpdesk.data.domain import DomainDeclaration
from dpdesk.gui.main_window import GUIDE_SEEN, MainWindow
from dpdesk.paths import sample_path
from tests.gui.test_app import tick
from tests.gui.conftest import WORK


def new_window(qtbot):
    from dpdesk.gui.app import make_app

    make_app()
    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1280, 860)
    w.show()
    qtbot.waitExposed(w)
    return w


@pytest.fixture
def window(qtbot, dpdesk_home):
    w = new_window(qtbot)
    yield w
    w.state.dirty = False


def test_the_guide_appears_on_the_first_start_only(qtbot, dpdesk_home):
    first = new_window(qtbot)
    assert first.guide is None
    assert first.offer_first_run_guide() is True
    assert first.guide is not None and first.guide.isVisible()
    assert first.guide.index == 0 and first.current_page() == "data"
    settings = configparser.ConfigParser()
    settings.read(dpdesk_home / "settings.ini")
    assert settings.getboolean(*GUIDE_SEEN.split("/"))
    first.close()
    second = new_window(qtbot)
    assert second.offer_first_run_guide() is False
    assert second.guide is None


def test_starting_the_app_shows_the_guide_on_a_fresh_home(qtbot, dpdesk_home, monkeypatch):
    """What `dpdesk gui` does: run_app shows the window and offers the guide (exec returns at once here)."""
    from dpdesk.gui import app as app_module

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # run_app installs its own
    monkeypatch.setattr(QApplication, "exec", lambda self: 0)
    before = set(QApplication.topLevelWidgets())
    assert app_module.run_app() == 0
    windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w not in before]
    assert len(windows) == 1
    started = windows[0]
    qtbot.addWidget(started)
    assert started.guide is not None and started.guide.isVisible()
    started.close()
    assert app_module.run_app() == 0  # the second start: no guide
    again = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w not in before
             and w is not started]
    qtbot.addWidget(again[0])
    assert again[0].guide is None
    again[0].close()


def centre_of(widget, window) -> QPoint:
    return widget.mapTo(window, widget.rect().center())


def test_the_guide_walks_through_the_five_pages_and_points_at_their_controls(window, qtbot):
    guide = window.start_guide()
    seen = []
    for k, step in enumerate(guidance.GUIDE):
        qtbot.waitUntil(lambda: bool(guide.spotlight.outlines()), timeout=WORK)
        assert guide.index == k
        assert window.current_page() == step.page == guidance.PAGES[k]
        assert guide.counter.text() == f"Step {k + 1} of 5"
        assert guide.title.text() == step.title
        targets = guide.targets(step.page)
        assert targets, f"step {step.page} points at nothing"
        outlines = guide.spotlight.outlines()
        assert guide.spotlight.isVisible()
        # the outline surrounds a control of the page shown
        assert any(rect.contains(centre_of(t, window)) for rect in outlines for t in targets if t.isVisible())
        assert guide.back_button.isEnabled() == (k > 0)
        seen.append(step.page)
        if k < 4:
            assert guide.next_button.text().startswith("Next")
            qtbot.mouseClick(guide.next_button, Qt.LeftButton)
    assert seen == list(guidance.PAGES)
    assert guide.next_button.text() == "Finish"
    qtbot.mouseClick(guide.back_button, Qt.LeftButton)
    assert guide.index == 3 and window.current_page() == "plan"
    guide.go(4)
    qtbot.mouseClick(guide.next_button, Qt.LeftButton)  # Finish
    assert not guide.isVisible() and not guide.spotlight.isVisible()


def test_the_guide_can_be_skipped_and_opened_again_from_help(window, qtbot):
    guide = window.start_guide()
    guide.go(2)
    qtbot.mouseClick(guide.skip_button, Qt.LeftButton)
    assert not guide.isVisible() and not guide.spotlight.isVisible()
    action = next(a for a in window.help_menu.actions() if a.text().replace("&", "") == "Getting started guide…")
    action.trigger()
    assert window.guide is guide and guide.isVisible() and guide.index == 0
    assert window.current_page() == "data"


def test_the_guide_says_when_a_step_is_done(window, qtbot):
    guide = window.start_guide()
    assert guide.done_label.text() == "" and guide.action.isVisible()
    data = dpdesk.load(sample_path())
    window.state.set_dataset(data, {"path": str(sample_path()), "format": "transactions"}, "groceries",
                             DomainDeclaration("public-data"))
    assert "Done" in guide.done_label.text() and not guide.action.isVisible()
    guide.go(1)
    tick(window, {"lpa", "gs"})
    assert guide.done_label.text() == ""  # Δ is not declared yet
    window.state.set_bound(20)
    assert "Done" in guide.done_label.text()


def test_the_status_bar_says_the_next_step_for_each_page_and_state(window, qtbot):
    label = window.next_step_label
    texts = {}
    for row, page in enumerate(guidance.PAGES):
        window.steps.setCurrentRow(row)
        texts[("empty", page)] = label.text()
    assert "import data" in texts[("empty", "data")].lower()
    assert "needs no data" in texts[("empty", "plan")]
    data = dpdesk.load(sample_path())
    window.state.set_dataset(data, {"path": str(sample_path()), "format": "transactions"}, "groceries",
                             DomainDeclaration("public-data"))
    tick(window, {"lpa", "gs"})
    window.steps.setCurrentRow(0)
    assert "② Configure" in label.text()
    window.steps.setCurrentRow(1)
    assert "declare Δ" in label.text()  # lpa and gs need the bound
    window.state.set_bound(20)
    assert "③ Compare" in label.text()
    window.steps.setCurrentRow(2)
    assert "Run comparison" in label.text()
    # the next step only asks whether there is a comparison or a release (no page is told of these stand-ins)
    window.state.comparison = object()
    window.update_next_step()
    assert "④ Plan" in label.text()
    window.steps.setCurrentRow(4)
    assert "Run release" in label.text()
    window.state.release = object()
    window.update_next_step()
    assert "Export…" in label.text()
    window.state.set_exported("the export folder")
    assert "publish the exported files" in label.text()
    window.state.release = window.state.comparison = window.state.exported_to = None
    for row, page in enumerate(guidance.PAGES):
        window.steps.setCurrentRow(row)
        texts[("configured", page)] = label.text()
    configured = [texts[("configured", page)] for page in guidance.PAGES]
    assert len(set(configured)) == 5  # a different next step on every page
    assert all(texts[("empty", p)] != texts[("configured", p)] for p in guidance.PAGES)


def test_a_passing_message_gives_way_to_the_next_step(window, qtbot):
    window.statusBar().showMessage("Saved.", 100)
    assert window.statusBar().currentMessage() == "Saved."
    qtbot.waitUntil(lambda: window.statusBar().currentMessage() == "", timeout=WORK)
    assert window.next_step_label.isVisible() and window.next_step_label.text().startswith("Next")


def test_going_to_another_page_clears_a_passing_message(window, qtbot):
    window.steps.setCurrentRow(0)
    window.statusBar().showMessage("Loaded groceries.csv.", 10_000)
    window.steps.setCurrentRow(3)
    assert window.statusBar().currentMessage() == ""
    assert window.next_step_label.isVisible() and "planner" in window.next_step_label.text()
