"""The Help window: every page, word and mechanism of dpdesk explained in plain words, with a
picture, searchable, offline. The content is data (``resources/help``, read by
``dpdesk.guidance``); this module only shows it."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import QByteArray, QRectF, QSize, Qt, QUrl
from PySide6.QtGui import QImage, QKeySequence, QPainter, QPalette, QShortcut
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QLineEdit, QSplitter, QTextBrowser, QTreeWidget, QTreeWidgetItem,
                               QVBoxLayout, QWidget)

from .. import guidance
from . import theme
from .widgets import fit_to_screen

SECTIONS = {"page": "The five steps", "term": "Words"}
HELP_SIZE = QSize(980, 680)
PICTURE_SCALE = 1.25  # the pictures are drawn 400 px wide; a little larger reads better beside the text


def picture_colours(colours: QPalette | None = None) -> dict[str, str]:
    """The picture colours (dpdesk.guidance) → the current palette's: ink is text, paper is base,
    muted and faint are blends of the two, and each accent is kept visible on the base."""
    colours = colours or theme.palette()
    base, text = colours.color(QPalette.Base), colours.color(QPalette.Text)
    mapping = {guidance.PICTURE_INK: text, guidance.PICTURE_PAPER: base,
               guidance.PICTURE_MUTED: theme.blend(base, text, 0.55),
               guidance.PICTURE_FAINT: theme.blend(base, text, 0.16)}
    mapping.update({accent: theme.series_colour(accent, colours) for accent in guidance.PICTURE_ACCENTS})
    return {key.lower(): value.name() for key, value in mapping.items()}


def themed_svg(path: Path, colours: QPalette | None = None) -> bytes:
    """A help picture's SVG with its colours replaced by the palette's (all at once, so that one
    replacement never feeds another)."""
    mapping = picture_colours(colours)
    pattern = re.compile("|".join(re.escape(key) for key in mapping), re.IGNORECASE)
    return pattern.sub(lambda match: mapping[match.group(0).lower()], path.read_text(encoding="utf-8")).encode()


def render_picture(path: Path, scale: float = PICTURE_SCALE, pixel_ratio: float = 1.0,
                   colours: QPalette | None = None) -> QImage:
    """A help picture drawn in the palette's colours on a transparent background."""
    renderer = QSvgRenderer(QByteArray(themed_svg(path, colours)))
    size = renderer.defaultSize() * scale
    image = QImage(QSize(round(size.width() * pixel_ratio), round(size.height() * pixel_ratio)),
                   QImage.Format_ARGB32_Premultiplied)
    image.fill(Qt.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    renderer.render(painter, QRectF(0, 0, image.width(), image.height()))
    painter.end()
    image.setDevicePixelRatio(pixel_ratio)
    return image


class HelpBrowser(QTextBrowser):
    """Shows one entry; ``picture:NAME.svg`` images are drawn from the help's pictures in the
    palette's colours, and ``help:ID`` links open other entries."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.generation = 0  # part of every picture's address: a new palette gets freshly drawn pictures

    def loadResource(self, kind, url: QUrl):  # noqa: N802 - Qt API
        if url.scheme() == "picture":
            path = guidance.help_dir() / "pictures" / url.path()
            if path.is_file():
                return render_picture(path, pixel_ratio=self.devicePixelRatioF())
        return super().loadResource(kind, url)


class HelpWindow(QWidget):
    """A separate window: a search box, the list of entries (grouped) and the entry shown."""

    def __init__(self, parent=None):
        super().__init__(parent, Qt.Window)
        self.setWindowTitle("dpdesk Help")
        fit_to_screen(self, HELP_SIZE)  # never taller than the screen
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search the help: a word such as epsilon, Δ, truncation, margin, GS …")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search the help")
        self.count = QLabel("")
        self.count.setAccessibleDescription("How many help entries match")
        top.addWidget(self.search, 1)
        top.addWidget(self.count)
        layout.addLayout(top)
        splitter = QSplitter(Qt.Horizontal)
        self.tree = QTreeWidget()
        self.tree.setHeaderHidden(True)
        self.tree.setAccessibleName("Help entries")
        self.tree.setMinimumWidth(260)
        splitter.addWidget(self.tree)
        self.browser = HelpBrowser()
        self.browser.setAccessibleName("Help text")
        splitter.addWidget(self.browser)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([300, 680])
        layout.addWidget(splitter, 1)
        self.items: dict[str, QTreeWidgetItem] = {}
        self.sections: list[QTreeWidgetItem] = []
        self.current: str | None = None
        self._fill()
        self.search.textChanged.connect(self.filter)
        self.search.returnPressed.connect(self._first_match)
        self.tree.currentItemChanged.connect(lambda item, _old: self._selected(item))
        self.browser.anchorClicked.connect(self._link)
        QShortcut(QKeySequence.Find, self, activated=self.focus_search)
        QShortcut(QKeySequence(Qt.Key_Escape), self, activated=self._escape)
        theme.on_palette_change(self._repaint_pictures)
        self.filter("")

    # -- the list ----------------------------------------------------------------------------
    def _fill(self) -> None:
        sections: dict[str, QTreeWidgetItem] = {}
        for entry in guidance.help_entries():
            name = SECTIONS.get(entry.kind) or entry.group or "Mechanisms"
            section = sections.get(name)
            if section is None:
                section = QTreeWidgetItem([name])
                section.setFlags(Qt.ItemIsEnabled)  # a heading: not selectable
                font = section.font(0)
                font.setBold(True)
                section.setFont(0, font)
                self.tree.addTopLevelItem(section)
                sections[name] = section
                self.sections.append(section)
            item = QTreeWidgetItem([entry.title])
            item.setData(0, Qt.UserRole, entry.id)
            item.setToolTip(0, entry.title)
            section.addChild(item)
            self.items[entry.id] = item
        self.tree.expandAll()

    def visible_ids(self) -> list[str]:
        """The entries the list shows now, in its order."""
        return [entry_id for entry_id, item in self.items.items() if not item.isHidden()]

    def filter(self, query: str) -> None:
        """Show only the entries that match ``query`` (every word, anywhere in the entry)."""
        shown = {entry.id for entry in guidance.search(query)}
        for entry_id, item in self.items.items():
            item.setHidden(entry_id not in shown)
        for section in self.sections:
            section.setHidden(all(section.child(i).isHidden() for i in range(section.childCount())))
        total = len(self.items)
        self.count.setText(f"{len(shown)} of {total} entries" if query.strip() else f"{total} entries")
        if not shown:
            self.current = None
            self.tree.setCurrentItem(None)
            self.browser.setMarkdown(f"# Nothing matches “{query.strip()}”\n\nTry a shorter or a different word "
                                     "(for example *noise*, *bound*, *budget*), or clear the search.")
            return
        if self.current not in shown:
            self.show_entry(self.visible_ids()[0])

    def _first_match(self) -> None:
        if self.visible_ids():
            self.show_entry(self.visible_ids()[0])
            self.tree.setFocus()

    def _selected(self, item) -> None:
        entry_id = item.data(0, Qt.UserRole) if item is not None else None
        if entry_id and entry_id != self.current:
            self.show_entry(entry_id)

    def _link(self, url: QUrl) -> None:
        if url.scheme() == "help":
            target = url.path()
            if target not in self.visible_ids():
                self.search.clear()  # a link leads anywhere, whatever the search
            self.show_entry(target)

    # -- the entry ---------------------------------------------------------------------------
    def show_entry(self, entry_id: str) -> None:
        """Show one entry (a page, a word or a mechanism id) and select it in the list."""
        entry = guidance.help_entry(entry_id)
        self.current = entry.id
        item = self.items[entry.id]
        if self.tree.currentItem() is not item:
            self.tree.setCurrentItem(item)
        picture = f"picture:{entry.picture.name}?v={self.browser.generation}" if entry.picture else None
        self.browser.setMarkdown(guidance.entry_markdown(entry, picture))

    def shown_text(self) -> str:
        """The entry shown, as plain text (what a screen reader reads)."""
        return self.browser.toPlainText()

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def _escape(self) -> None:
        if self.search.text():
            self.search.clear()
        else:
            self.close()

    def _repaint_pictures(self) -> None:
        self.browser.generation += 1
        if self.current is not None:
            self.show_entry(self.current)
