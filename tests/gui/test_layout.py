"""Nothing cut off, overlapping or off the window (issue 31, item 7 and 8): every page at the window size a
1280 × 800 and a 1024 × 768 screen give (less the window manager's decorations), with the first-run
guide closed and open, a long dataset name, a comparison drawn in every plot, a release on screen and
the budget over its cap — for people × items data and for a table of cells. tests/gui/layout_check.py
says what counts as a problem; the Help window's size is checked with the main window's, in
test_window_fits_screen.py."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, QSize
from PySide6.QtWidgets import QWidget

import dpdesk
from dpdesk.data.domain import DomainDeclaration
from dpdesk.gui.main_window import PAGE_KEYS, PREFERRED_SIZE
from dpdesk.gui.widgets import fitted_geometry
from dpdesk.privacy.ledger import Ledger

from .layout_check import layout_problems
from tests.gui.conftest import WORK

SCREENS = [(1280, 800), (1024, 768)]
LONG_NAME = "retail_shoppers_of_the_copenhagen_region_all_stores_2019-2025"


def window_for(qtbot, screen):
    from dpdesk.gui.app import make_app
    from dpdesk.gui.main_window import MainWindow

    make_app()
    window = MainWindow()
    qtbot.addWidget(window)
    size = fitted_geometry(QRect(0, 0, *screen), PREFERRED_SIZE).size()
    window.resize(size)
    window.show()
    qtbot.waitExposed(window)
    return window, size


def settle(qtbot, window) -> None:
    """Let the layout settle: page sizes and arrangements follow each other over a few event-loop turns
    (a row rearranged, then its page resized). Turns until two in a row change no widget's geometry."""
    def geometries():
        return [(w.geometry().getRect(), w.isVisible()) for w in window.findChildren(QWidget)]

    before, unchanged = geometries(), 0
    for _turn in range(100):
        qtbot.wait(5)
        now = geometries()
        unchanged = unchanged + 1 if now == before else 0
        if unchanged == 2:
            return
        before = now
    raise AssertionError("the layout never settled: widgets kept moving")


def every_page(window, qtbot, size, guide: bool) -> list[str]:
    """The problems on every page (and every tab of Compare), with the guide at that page's step."""
    problems = []
    if guide:
        window.start_guide()
    elif window.guide is not None:
        window.guide.close()
    for index, page in enumerate(PAGE_KEYS):
        tabs = range(window.compare_page.tabs.count()) if page == "compare" else [None]
        for tab in tabs:
            window.show_page(page)
            if guide:
                window.guide.go(index)
            if tab is not None:
                window.compare_page.tabs.setCurrentIndex(tab)
            settle(qtbot, window)
            problems += [f"{page}{'' if tab is None else f' tab {tab}'}, guide {'open' if guide else 'closed'}: "
                         f"{problem}" for problem in layout_problems(window, wanted=size)]
    return problems


def compare_and_release(window, qtbot, dialogs):
    compare = window.compare_page
    compare.epsilons.setText("0.1, 0.69, 2")
    compare.repeats.setValue(2)
    compare.run()
    qtbot.waitUntil(lambda: window.state.comparison is not None and not compare.task.running, timeout=WORK)
    release = window.release_page
    release.confirm = lambda text: True
    release.run()
    qtbot.waitUntil(lambda: window.state.release is not None or bool(dialogs), timeout=WORK)
    assert not dialogs, dialogs
    # the next release would go over the cap: the warning and the override are on screen
    Ledger.open().set_cap(window.state.dataset_name, 0.5, "layout test: over the cap")
    window.state.ledger_changed.emit()
    release.refresh()
    assert release.cap_warning.isVisibleTo(release) and release.override.isVisibleTo(release)


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_nothing_is_cut_before_any_data(qtbot, dpdesk_home, screen):
    window, size = window_for(qtbot, screen)
    problems = every_page(window, qtbot, size, guide=False) + every_page(window, qtbot, size, guide=True)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_nothing_is_cut_with_people_and_items(qtbot, dpdesk_home, data_dir, dialogs, screen):
    window, size = window_for(qtbot, screen)
    data = dpdesk.load(data_dir / "retail.dat.gz")
    window.state.set_dataset(data, {"path": str(data_dir / "retail.dat.gz"), "format": "transactions"}, LONG_NAME,
                             DomainDeclaration("public-data"))
    window.state.set_bound(20)
    window.state.set_typical_row_length(8)
    window.configure_page.use_recommendation()
    compare_and_release(window, qtbot, dialogs)
    problems = every_page(window, qtbot, size, guide=False) + every_page(window, qtbot, size, guide=True)
    window.state.dirty = False
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_nothing_is_cut_with_a_table_of_cells(qtbot, dpdesk_home, data_dir, dialogs, screen):
    window, size = window_for(qtbot, screen)
    path = data_dir / "adult.data.gz"
    cells = dpdesk.load(path, format="records", attributes=[1, 3, 5, 6, 7])
    window.state.set_dataset(cells, {"path": str(path), "format": "records", "attributes": [1, 3, 5, 6, 7]},
                             "adult census", DomainDeclaration("public-data", cells=True))
    window.configure_page.use_recommendation()
    compare_and_release(window, qtbot, dialogs)
    window.compare_page.tabs.setCurrentIndex(3)  # the details: error by range size, a curve per summary
    problems = every_page(window, qtbot, size, guide=True)
    window.state.dirty = False
    assert not problems, "\n".join(problems)


def test_the_guide_scrolls_to_what_it_points_at(qtbot, dpdesk_home, data_dir):
    window, _size = window_for(qtbot, (1024, 768))
    data = dpdesk.load(data_dir / "chess.dat.gz")
    window.state.set_dataset(data, {"path": str(data_dir / "chess.dat.gz"), "format": "transactions"}, "chess",
                             DomainDeclaration("public-data"))
    guide = window.start_guide()
    for index, page in enumerate(PAGE_KEYS):
        guide.go(index)
        settle(qtbot, window)
        for target in guide.targets(page)[:1]:  # the first control a step speaks of is in view
            assert not target.visibleRegion().isEmpty(), (page, target.accessibleName())
    window.state.dirty = False


def test_the_layout_check_sees_a_clipped_label_and_a_page_that_scrolls_sideways(qtbot, dpdesk_home):
    """The check itself: a word-wrapped label held to one line, and a page wider than the window."""
    from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

    window = QWidget()
    qtbot.addWidget(window)
    layout = QVBoxLayout(window)
    clipped = QLabel("a sentence long enough to need two lines at this width " * 3)
    clipped.setWordWrap(True)
    clipped.setFixedHeight(18)
    layout.addWidget(clipped)
    area = QScrollArea()
    wide = QLabel("x" * 300)
    area.setWidget(wide)
    layout.addWidget(area)
    window.resize(400, 300)
    window.show()
    qtbot.waitExposed(window)
    problems = layout_problems(window, wanted=QSize(400, 300))
    assert any("is cut" in p and "sentence" in p for p in problems), problems
    assert any("scrolls sideways" in p for p in problems), problems
