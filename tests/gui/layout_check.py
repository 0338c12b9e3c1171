"""What a steward would see cut off: every visible widget that shows text, checked against its own size,
its parents and the window.

A problem is one line saying which widget (its class, its object name or its text) and what is wrong:

* **cut**: a label, button, check box or group box smaller than its text needs — a word-wrapped label
  lower than its height for its width, any other narrower (or lower) than its size hint;
* **outside**: a widget that reaches past the edge of a parent that does not scroll that way (a
  scroll area's viewport may be taller than the window: the page scrolls), or past the window;
* **overlaps**: a widget with text drawn over a sibling (a caption over its plot when the page was
  given less height than it needs);
* **scrolls sideways**: a page's scroll area showing a horizontal scroll bar (a page wider than the
  window: its right side, with Export, is off the screen);
* **squashed**: any widget smaller than the least size it was given (a plot pressed to a strip);
* **larger than asked**: the window could not take the size it was given (its minimum is larger).
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import Qt as GuiQt, QTextDocument
from PySide6.QtWidgets import (QAbstractButton, QAbstractScrollArea, QCheckBox, QGroupBox, QLabel, QRadioButton,
                               QScrollArea, QTabBar, QWidget)

SLACK = 2  # pixels: rounding in the style's metrics


def shown_text(widget: QWidget) -> str:
    """The text a widget shows, as plain text ("" for widgets that show none this module checks)."""
    if isinstance(widget, QLabel):
        text = widget.text()
        if widget.textFormat() == Qt.RichText or (widget.textFormat() == Qt.AutoText and GuiQt.mightBeRichText(text)):
            document = QTextDocument()
            document.setHtml(text)
            text = document.toPlainText()
        return text.strip()
    if isinstance(widget, QAbstractButton) and not isinstance(widget, QTabBar):
        return widget.text().strip()
    if isinstance(widget, QGroupBox):
        return widget.title().strip()
    return ""


def describe(widget: QWidget) -> str:
    text = shown_text(widget).replace("\n", " ")
    name = widget.objectName() or widget.accessibleName()
    return f"{type(widget).__name__}" + (f" '{name}'" if name else "") + (f" “{text[:60]}”" if text else "")


def _cut(widget: QWidget) -> str | None:
    if isinstance(widget, QLabel):
        if not widget.text():
            return None
        if widget.wordWrap():
            needed = widget.heightForWidth(widget.width())
            if needed > 0 and widget.height() + SLACK < needed:
                return f"needs {needed} px of height at its width {widget.width()}, has {widget.height()}"
            return None
        hint = widget.sizeHint()
        if widget.width() + SLACK < hint.width() or widget.height() + SLACK < hint.height():
            return f"needs {hint.width()}×{hint.height()} px, has {widget.width()}×{widget.height()}"
        return None
    if isinstance(widget, (QCheckBox, QRadioButton)) or (isinstance(widget, QAbstractButton)
                                                          and not isinstance(widget, QTabBar)):
        hint = widget.sizeHint()
        if widget.width() + SLACK < hint.width() or widget.height() + SLACK < min(hint.height(), 20):
            return f"needs {hint.width()}×{hint.height()} px, has {widget.width()}×{widget.height()}"
        return None
    if isinstance(widget, QGroupBox) and widget.title():
        hint = widget.minimumSizeHint()
        if widget.width() + SLACK < hint.width():
            return f"needs {hint.width()} px of width, has {widget.width()}"
    return None


def _outside(widget: QWidget, window: QWidget) -> str | None:
    """Whether the widget reaches past a parent that does not scroll, or past the window. Inside a scroll
    area what is below (or above) scrolls into view; from there on the scroll area itself is checked."""
    rect = QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())
    parent = widget.parentWidget()
    while parent is not None:
        area = window.rect() if parent is window else QRect(parent.mapTo(window, QPoint(0, 0)), parent.size())
        grand = parent.parentWidget()
        if isinstance(grand, QAbstractScrollArea) and grand.viewport() is parent:
            if isinstance(grand, QScrollArea) and (rect.left() < area.left() - SLACK
                                                   or rect.right() > area.right() + SLACK):
                return f"reaches sideways past the scroll area {describe(grand)}"
            rect = QRect(grand.mapTo(window, QPoint(0, 0)), grand.size())  # the scroll area, from here up
            parent = grand.parentWidget()
            continue
        if parent is window:
            if not area.adjusted(-SLACK, -SLACK, SLACK, SLACK).contains(rect):
                return (f"at {rect.x()},{rect.y()} {rect.width()}×{rect.height()}, outside the window "
                        f"{area.width()}×{area.height()}")
            return None
        if not rect.intersects(area):
            return f"hidden outside its parent {describe(parent)}"
        if not area.adjusted(-SLACK, -SLACK, SLACK, SLACK).contains(rect):
            return f"cut by its parent {describe(parent)}"
        parent = grand
    return None


def _overlaps(widget: QWidget) -> str | None:
    parent = widget.parentWidget()
    if parent is None:
        return None
    rect = widget.geometry().adjusted(SLACK, SLACK, -SLACK, -SLACK)
    for sibling in parent.children():
        if sibling is widget or not isinstance(sibling, QWidget) or not sibling.isVisible() or sibling.isWindow():
            continue
        if sibling.testAttribute(Qt.WA_TransparentForMouseEvents):  # an overlay that draws outlines only
            continue
        if rect.intersects(sibling.geometry()):
            return f"overlaps {describe(sibling)}"
    return None


def layout_problems(window: QWidget, *, wanted=None) -> list[str]:
    """Every problem (module notes) among the visible widgets of ``window``; ``wanted`` its requested size."""
    problems = []
    if wanted is not None and (window.width() > wanted.width() or window.height() > wanted.height()):
        problems.append(f"the window is {window.width()}×{window.height()}, larger than the "
                        f"{wanted.width()}×{wanted.height()} it was given (its minimum size is "
                        f"{window.minimumSizeHint().width()}×{window.minimumSizeHint().height()})")
    for area in window.findChildren(QScrollArea):
        if area.isVisible() and area.horizontalScrollBar().isVisible():
            problems.append(f"{describe(area)} scrolls sideways: its content is {area.widget().width()} px wide "
                            f"in {area.viewport().width()} px")
    for widget in window.findChildren(QWidget):
        if not widget.isVisible() or widget.window() is not window:
            continue
        least = widget.minimumSize()
        if widget.width() + SLACK < least.width() or widget.height() + SLACK < least.height():
            problems.append(f"{describe(widget)} is squashed: {widget.width()}×{widget.height()} px, less than its "
                            f"least {least.width()}×{least.height()}")
        if not shown_text(widget):
            continue
        cut = _cut(widget)
        if cut:
            problems.append(f"{describe(widget)} is cut: {cut}")
        outside = _outside(widget, window)
        if outside:
            problems.append(f"{describe(widget)} {outside}")
        overlap = _overlaps(widget)
        if overlap:
            problems.append(f"{describe(widget)} {overlap}")
    return problems
