"""What a screen reader gets (issue 31, item 13), through Qt's own accessibility interfaces — the ones its
AT-SPI bridge serves — on every page, with data loaded, a comparison drawn and the guide open: every
control that takes the focus has a name made of words, every label is read as what it shows, Tab leaves
every table and goes round the page, plots carry a description, and the labels before a combo box name
it. scripts/atspi_walk.sh walks the same through AT-SPI itself (a D-Bus session and Xvfb)."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QTextDocument
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSlider, QAbstractSpinBox, QApplication,
                               QComboBox, QLabel, QLineEdit, QScrollArea, QTabBar, QWidget)

from dpdesk.data.domain import HOW_DISCOVERED, HOW_LIST, HOW_PUBLIC_DATA, HOW_RANGE
from dpdesk.gui.main_window import PAGE_KEYS
from dpdesk.gui.widgets import ThemedPlot
from tests.gui.conftest import WORK

CONTROLS = (QAbstractButton, QComboBox, QAbstractSpinBox, QLineEdit, QAbstractSlider, QAbstractItemView, QTabBar,
            QScrollArea)
CODE_LIKE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def accessible(widget, what=QAccessible.Name) -> str:
    return (QAccessible.queryAccessibleInterface(widget).text(what) or "").strip()


def plain(label: QLabel) -> str:
    document = QTextDocument()
    document.setHtml(label.text())
    return " ".join(document.toPlainText().split()) if "<" in label.text() else " ".join(label.text().split())


@pytest.fixture
def ready_window(chess_window, qtbot, held_comparison):
    """Chess loaded and named, Δ declared, the recommendation used, a comparison drawn, the guide open."""
    window = chess_window
    window.state.set_typical_row_length(5)
    window.configure_page.use_recommendation()
    page = window.compare_page
    page.repeats.setValue(2)
    held_comparison.release()
    page.run()
    qtbot.waitUntil(lambda: window.state.comparison is not None and not page.task.running, timeout=WORK)
    window.start_guide()
    return window


def buddies(window) -> dict:
    """{control: the text of the label that names it}."""
    return {label.buddy(): plain(label) for label in window.findChildren(QLabel) if label.buddy() is not None}


def shown(window, kind):
    return [w for w in window.findChildren(QWidget) if isinstance(w, kind) and w.isVisible() and w.window() is window]


def test_every_control_has_a_name_in_words_and_every_label_reads_its_text(ready_window):
    window = ready_window
    problems = []
    for page in PAGE_KEYS:
        window.show_page(page)
        for control in shown(window, CONTROLS):
            if control.focusPolicy() & Qt.TabFocus != Qt.TabFocus or not control.isEnabled():
                continue
            if isinstance(control, QLineEdit) and isinstance(control.parentWidget(), QAbstractSpinBox):
                continue  # a spin box's own text field: the spin box carries the name
            if isinstance(control, QComboBox):
                # on Linux Qt reads a combo box's value as its name; what it is for comes from the label
                # that names it (the labelled-by relation): every combo box has one
                if control not in buddies(window):
                    problems.append(f"{page}: the combo box {control.accessibleName()!r} has no label naming it")
                continue
            name = accessible(control)
            if not name:
                problems.append(f"{page}: {type(control).__name__} {control.objectName()!r} has no name")
            elif CODE_LIKE.match(name) and not isinstance(control, QLineEdit):
                problems.append(f"{page}: {type(control).__name__} is named with an internal code: {name!r}")
        for label in shown(window, QLabel):
            text = plain(label)
            if text and text.replace("\u200b", "") not in " ".join(accessible(label).split()).replace("\u200b", ""):
                problems.append(f"{page}: a label shows {text[:50]!r} but is read as {accessible(label)[:50]!r}")
        for plot in shown(window, ThemedPlot):
            if not accessible(plot, QAccessible.Description):
                problems.append(f"{page}: the plot {accessible(plot)!r} has no description (text alternative)")
        for view in shown(window, QAbstractItemView):
            if view.tabKeyNavigation():
                problems.append(f"{page}: Tab moves between the cells of {accessible(view)!r} and never leaves it")
    assert not problems, "\n".join(problems)


def test_tab_goes_round_every_page_and_leaves_every_table(ready_window, qtbot):
    window = ready_window
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    for page in PAGE_KEYS:
        window.show_page(page)
        window.steps.setFocus()
        qtbot.waitUntil(window.steps.hasFocus)
        visited, previous, stay = [], None, 0
        for _press in range(300):
            QTest.keyClick(QApplication.focusWidget(), Qt.Key_Tab)
            now = QApplication.focusWidget()
            table = now if isinstance(now, QAbstractItemView) else None
            stay = stay + 1 if table is not None and table is previous else 0
            assert stay < 3, f"{page}: Tab stays in {accessible(now)!r}"
            previous = table
            visited.append(now)
            if now is window.steps:
                break
        assert visited[-1] is window.steps, f"{page}: Tab never came back round to the steps list"
        assert len(visited) > 3, f"{page}: Tab reached only {len(visited)} controls"


def test_the_labels_before_combo_boxes_name_them(ready_window):
    window = ready_window
    compare, release = window.compare_page, window.release_page
    named = buddies(window)
    assert named.get(compare.metric) == "Error measure:"
    assert named.get(release.chosen) == "How it was chosen:"
    assert named.get(compare.example_choice) == "Show:"


@pytest.mark.parametrize("kind", ["incidence", "cells"])
def test_the_published_list_choices_are_read_as_their_sentences(qtbot, kind):
    from dpdesk.gui.publication import CHOICE_TEXT, PublicationChoice

    choice = PublicationChoice()
    qtbot.addWidget(choice)
    choice.set_kind(kind)
    choice.show()
    for how in (HOW_LIST, HOW_RANGE, HOW_PUBLIC_DATA, HOW_DISCOVERED):
        button = choice.buttons[how]
        if how in CHOICE_TEXT[kind]:
            assert accessible(button) == CHOICE_TEXT[kind][how], how
            assert accessible(button) != how
