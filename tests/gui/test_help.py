"""The Help window on the real widgets: F1 opens the current page's entry, the search box filters
the list, every registered mechanism shows its picture, links open other entries, and the
pictures take the palette's colours."""

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QColor, QKeySequence, QPalette
from PySide6.QtWidgets import QApplication

from dpdesk import guidance
from dpdesk import mechanisms as registry
from dpdesk.gui import theme
from dpdesk.gui.help_window import HelpWindow, picture_colours, render_picture, themed_svg
from dpdesk.gui.main_window import MainWindow


@pytest.fixture
def window(qtbot, dpdesk_home):
    from dpdesk.gui.app import make_app

    make_app()
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    yield w
    if w.help_window is not None:
        w.help_window.close()
    w.state.dirty = False


@pytest.fixture
def help_window(qtbot):
    h = HelpWindow()
    qtbot.addWidget(h)
    h.show()
    return h


@pytest.fixture
def restore_palette(qapp):
    saved = QPalette(qapp.palette())
    yield
    qapp.setPalette(saved)


def test_f1_opens_the_help_of_the_page_shown(window, qtbot):
    for row, page in enumerate(guidance.PAGES):
        window.steps.setCurrentRow(row)
        window.setFocus()
        qtbot.keyClick(window, Qt.Key_F1)
        helper = window.help_window
        assert helper is not None and helper.isVisible()
        assert helper.current == f"page-{page}"
        assert helper.tree.currentItem().text(0) == guidance.help_entry(f"page-{page}").title
        assert guidance.help_entry(f"page-{page}").title in helper.shown_text()


def test_the_help_menu_offers_page_help_glossary_and_the_guide(window):
    actions = {a.text().replace("&", ""): a for a in window.help_menu.actions() if a.text()}
    assert actions["Help for this page"].shortcut() == QKeySequence(QKeySequence.HelpContents)
    assert {"Help and glossary (search)…", "How dpdesk protects privacy", "Getting started guide…",
            "About dpdesk"} <= set(actions)
    actions["How dpdesk protects privacy"].trigger()
    assert window.help_window.current == "privacy"
    window.help_window.search.setText("epsilon")
    actions["Help and glossary (search)…"].trigger()
    assert window.help_window.search.hasFocus() or window.help_window.search.selectedText() == "epsilon"


def test_search_filters_the_list(help_window, qtbot):
    every = help_window.visible_ids()
    assert len(every) == len(guidance.help_entries()) and help_window.count.text() == f"{len(every)} entries"
    qtbot.keyClicks(help_window.search, "truncation")
    shown = help_window.visible_ids()
    assert "truncation" in shown and "delta" in shown and "sketch" not in shown
    assert len(shown) < len(every)
    assert all(guidance.matches(guidance.help_entry(i), "truncation") for i in shown)
    hidden = [i for i, item in help_window.items.items() if item.isHidden()]
    assert hidden and not any(guidance.matches(guidance.help_entry(i), "truncation") for i in hidden)
    assert help_window.current in shown  # what is shown is always a match
    assert help_window.count.text() == f"{len(shown)} of {len(every)} entries"
    # a section without a match disappears with its entries
    cells = next(s for s in help_window.sections if "cells" in s.text(0))
    assert cells.isHidden()
    help_window.search.clear()
    assert help_window.visible_ids() == every and not cells.isHidden()
    qtbot.keyClicks(help_window.search, "xyzzy")
    assert help_window.visible_ids() == [] and help_window.current is None
    assert "Nothing matches" in help_window.shown_text()


def test_every_registered_mechanism_shows_its_entry_and_picture(help_window):
    for mechanism in registry.all_mechanisms():
        help_window.show_entry(mechanism.id)
        assert help_window.current == mechanism.id
        text = help_window.shown_text()
        assert mechanism.name in text and mechanism.reference in text
        entry = guidance.help_entry(mechanism.id)
        url = QUrl(f"picture:{entry.picture.name}?v={help_window.browser.generation}")
        image = help_window.browser.loadResource(2, url)  # QTextDocument.ImageResource
        assert image is not None and not image.isNull() and image.width() >= 400
        drawn = sum(1 for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)
                    if QColor(image.pixelColor(x, y)).alpha() > 0)
        assert drawn > 40, f"the picture of {mechanism.id} is (almost) empty"


def test_links_open_other_entries_even_while_searching(help_window, qtbot):
    help_window.show_entry("lpa")
    qtbot.keyClicks(help_window.search, "LPA")
    help_window.browser.anchorClicked.emit(QUrl("help:truncation"))
    assert help_window.current == "truncation"
    assert "truncation" in help_window.visible_ids()


def test_escape_clears_the_search_then_closes(help_window, qtbot):
    qtbot.keyClicks(help_window.search, "budget")
    qtbot.keyClick(help_window.search, Qt.Key_Escape)
    assert help_window.search.text() == "" and help_window.isVisible()
    qtbot.keyClick(help_window.search, Qt.Key_Escape)
    assert not help_window.isVisible()


def test_pictures_take_the_palette_colours(qapp, restore_palette):
    path = guidance.help_entry("lpa").picture
    qapp.setPalette(theme.dark_palette())
    svg = themed_svg(path).decode()
    assert guidance.PICTURE_INK not in svg.lower() and guidance.PICTURE_FAINT not in svg.lower()
    text = theme.palette().color(QPalette.Text).name()
    assert text in svg
    base = theme.palette().color(QPalette.Base)
    for colour in picture_colours().values():
        if colour != base.name():
            assert theme.contrast(QColor(colour), base) >= 1.2
    # accents stay visible on the dark base: lines and shapes need 3:1
    for accent in guidance.PICTURE_ACCENTS:
        assert theme.contrast(QColor(picture_colours()[accent]), base) >= theme.GRAPHICS_CONTRAST
    image = render_picture(path)
    assert QColor(image.pixelColor(0, 0)).alpha() == 0  # transparent: the window's base shows through


def test_the_help_window_follows_a_palette_change(help_window, qapp, restore_palette):
    help_window.show_entry("gs")
    before = help_window.browser.generation
    qapp.setPalette(theme.high_contrast_palette())
    QApplication.processEvents()
    assert help_window.browser.generation == before + 1 and help_window.current == "gs"
