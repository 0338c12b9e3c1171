"""Colours from the palette, so that light, dark and high-contrast desktops all stay readable.

No widget hard-codes a colour. Neutral colours are palette roles; tinted ones (banners, the
internal badge, warning text) are the palette's own colours blended with an accent from the
Okabe–Ito set (distinguishable with colour blindness), and text on them is pushed towards
black or white until its contrast reaches the WCAG 2.1 level for normal text (4.5:1).

``apply_theme(app, name)`` starts the app in ``light``, ``dark`` or ``high-contrast`` (the
``--theme`` option of ``dpdesk gui`` and ``DPDESK_THEME``); ``system`` keeps the desktop's
own palette. Widgets whose colours are computed rather than inherited follow a change of
palette through :func:`on_palette_change`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory, QWidget

from ..errors import ParameterError

THEMES = ("system", "light", "dark", "high-contrast")
THEME_VARIABLE = "DPDESK_THEME"

# Okabe–Ito: the accents of banners and badges, and the plot series (widgets.PALETTE)
ACCENTS = {"warning": "#E69F00", "info": "#0072B2", "danger": "#D55E00", "ok": "#009E73"}
TEXT_CONTRAST = 4.5      # WCAG 2.1 AA, normal text
GRAPHICS_CONTRAST = 3.0  # WCAG 2.1 AA, lines and shapes needed to read a chart (1.4.11)


# -- colour arithmetic (WCAG 2.1 definitions) ------------------------------------------------
def luminance(colour: QColor) -> float:
    """Relative luminance of an sRGB colour: 0 for black, 1 for white."""
    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4
    return 0.2126 * linear(colour.redF()) + 0.7152 * linear(colour.greenF()) + 0.0722 * linear(colour.blueF())


def contrast(first: QColor, second: QColor) -> float:
    """Contrast ratio, from 1 (the same) to 21 (black on white)."""
    light, dark = sorted((luminance(QColor(first)), luminance(QColor(second))), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def blend(base: QColor, other: QColor, amount: float) -> QColor:
    """``amount`` of ``other`` over ``base`` (0: base, 1: other), opaque."""
    base, other = QColor(base), QColor(other)
    return QColor.fromRgbF(*(b + (o - b) * amount for b, o in ((base.redF(), other.redF()),
                                                               (base.greenF(), other.greenF()),
                                                               (base.blueF(), other.blueF()))))


def readable(colour: QColor, background: QColor, minimum: float = TEXT_CONTRAST) -> QColor:
    """``colour``, moved towards black or white (whichever contrasts more with the background)
    just far enough to reach ``minimum`` against ``background``. Black or white reach 4.58 on
    any background, so every minimum up to 4.5 is met."""
    colour, background = QColor(colour), QColor(background)
    if contrast(colour, background) >= minimum:
        return colour
    extreme = QColor("black") if contrast(QColor("black"), background) >= contrast(QColor("white"), background) \
        else QColor("white")
    for step in range(1, 21):
        moved = blend(colour, extreme, step / 20)
        if contrast(moved, background) >= minimum:
            return moved
    return extreme


# -- the palette -------------------------------------------------------------------------------
def palette() -> QPalette:
    """The application's palette (a default one before the application exists)."""
    app = QApplication.instance()
    return app.palette() if app is not None else QPalette()


def is_dark(colours: QPalette | None = None) -> bool:
    colours = colours or palette()
    return luminance(colours.color(QPalette.Base)) < luminance(colours.color(QPalette.Text))


@dataclass(frozen=True)
class Tint:
    """The colours of a tinted box: its background, its text and its border."""

    background: QColor
    text: QColor
    border: QColor


def banner_colours(kind: str, colours: QPalette | None = None) -> Tint:
    """A banner of ``kind`` (warning, info, danger, ok): the palette's base tinted with the accent,
    the palette's text on it (made readable), a border in the accent."""
    colours = colours or palette()
    base, text, accent = colours.color(QPalette.Base), colours.color(QPalette.Text), QColor(ACCENTS[kind])
    # a dark base needs a stronger tint for the accent to show at all
    background = blend(base, accent, 0.30 if is_dark(colours) else 0.14)
    return Tint(background, readable(text, background), readable(accent, background, GRAPHICS_CONTRAST))


def badge_colours(kind: str = "danger", colours: QPalette | None = None) -> Tint:
    """A small solid label (e.g. "INTERNAL"): the accent darkened towards the palette's darker end
    (its text on light desktops, its base on dark ones), with the lighter end as its text — a deep
    red chip with light text on every desktop, never a light patch on a dark one."""
    colours = colours or palette()
    base, text = colours.color(QPalette.Base), colours.color(QPalette.Text)
    darker, lighter = (base, text) if is_dark(colours) else (text, base)
    background = blend(QColor(ACCENTS[kind]), darker, 0.35)
    return Tint(background, readable(lighter, background), background)


def on_window(colour: str | QColor, colours: QPalette | None = None) -> QColor:
    """Text in ``colour`` (e.g. a series' name), made readable on the window background."""
    colours = colours or palette()
    return readable(QColor(colour), colours.color(QPalette.Window))


def accent_text(kind: str, colours: QPalette | None = None) -> QColor:
    """Text in the accent of ``kind`` (e.g. an error sentence), readable on the window."""
    return on_window(ACCENTS[kind], colours)


def muted(colours: QPalette | None = None) -> QColor:
    """A quiet line colour (reference diagonals, grid-like marks), half-way between text and base."""
    colours = colours or palette()
    background = colours.color(QPalette.Base)
    return readable(blend(background, colours.color(QPalette.Text), 0.5), background, GRAPHICS_CONTRAST)


def translucent_base(alpha: int, colours: QPalette | None = None) -> QColor:
    """The base colour, partly transparent: behind a label drawn over a plot."""
    colour = QColor((colours or palette()).color(QPalette.Base))
    colour.setAlpha(alpha)
    return colour


def plot_colours(colours: QPalette | None = None) -> tuple[QColor, QColor]:
    """(background, foreground) of a plot: the palette's base and text."""
    colours = colours or palette()
    return colours.color(QPalette.Base), colours.color(QPalette.Text)


def series_colour(colour: str | QColor, colours: QPalette | None = None) -> QColor:
    """A plot series colour made visible on the plot background (black becomes the text colour)."""
    background, foreground = plot_colours(colours)
    colour = QColor(colour)
    if colour == QColor("black"):
        return foreground
    return readable(colour, background, GRAPHICS_CONTRAST)


# -- themes ------------------------------------------------------------------------------------
def _palette_from(roles: dict, disabled: dict) -> QPalette:
    result = QPalette()
    for role, value in roles.items():
        result.setColor(QPalette.All, role, QColor(value))
    for role, value in disabled.items():
        result.setColor(QPalette.Disabled, role, QColor(value))
    return result


def dark_palette() -> QPalette:
    return _palette_from({
        QPalette.Window: "#2B2B2B", QPalette.WindowText: "#E8E8E8", QPalette.Base: "#1E1E1E",
        QPalette.AlternateBase: "#303030", QPalette.ToolTipBase: "#3A3A3A", QPalette.ToolTipText: "#F0F0F0",
        QPalette.PlaceholderText: "#A6A6A6", QPalette.Text: "#E8E8E8", QPalette.Button: "#373737",
        QPalette.ButtonText: "#E8E8E8", QPalette.BrightText: "#FF8A80", QPalette.Light: "#4A4A4A",
        QPalette.Midlight: "#3E3E3E", QPalette.Mid: "#5A5A5A", QPalette.Dark: "#202020",
        QPalette.Shadow: "#000000", QPalette.Highlight: "#2F6FC0", QPalette.HighlightedText: "#FFFFFF",
        QPalette.Link: "#7DB8FF", QPalette.LinkVisited: "#C3A6FF",
    }, {QPalette.WindowText: "#8C8C8C", QPalette.Text: "#8C8C8C", QPalette.ButtonText: "#8C8C8C",
        QPalette.Base: "#262626", QPalette.Button: "#2E2E2E", QPalette.Highlight: "#4A4A4A"})


def high_contrast_palette() -> QPalette:
    """White on black with yellow accents, as high-contrast desktop themes do."""
    return _palette_from({
        QPalette.Window: "#000000", QPalette.WindowText: "#FFFFFF", QPalette.Base: "#000000",
        QPalette.AlternateBase: "#1A1A1A", QPalette.ToolTipBase: "#000000", QPalette.ToolTipText: "#FFFFFF",
        QPalette.PlaceholderText: "#D0D0D0", QPalette.Text: "#FFFFFF", QPalette.Button: "#000000",
        QPalette.ButtonText: "#FFFFFF", QPalette.BrightText: "#FFFF00", QPalette.Light: "#FFFFFF",
        QPalette.Midlight: "#C0C0C0", QPalette.Mid: "#FFFFFF", QPalette.Dark: "#FFFFFF",
        QPalette.Shadow: "#FFFFFF", QPalette.Highlight: "#FFFF00", QPalette.HighlightedText: "#000000",
        QPalette.Link: "#FFFF00", QPalette.LinkVisited: "#00FFFF",
    }, {QPalette.WindowText: "#A0A0A0", QPalette.Text: "#A0A0A0", QPalette.ButtonText: "#A0A0A0"})


def theme_palette(name: str) -> QPalette | None:
    """The palette of a theme; None for ``system`` (the desktop's own)."""
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}: choose one of {', '.join(THEMES)}")
    if name == "light":
        return QStyleFactory.create("Fusion").standardPalette()
    if name == "dark":
        return dark_palette()
    if name == "high-contrast":
        return high_contrast_palette()
    return None


def chosen_theme(name: str | None = None) -> str:
    """The theme to start with: ``name`` if given, else ``DPDESK_THEME``, else ``system``."""
    name = (name or os.environ.get(THEME_VARIABLE) or "system").strip().lower()
    if name not in THEMES:
        raise ParameterError(f"Unknown theme '{name}': choose one of {', '.join(THEMES)} (the --theme option "
                             f"or {THEME_VARIABLE}).")
    return name


def apply_theme(app: QApplication, name: str) -> None:
    """Give the running application the palette of a theme (``system``: leave the desktop's)."""
    chosen = theme_palette(name)
    if chosen is not None:
        app.setPalette(chosen)


# -- following a change of palette -------------------------------------------------------------
class _Watcher(QWidget):
    """A hidden top-level widget: it inherits the application palette, so Qt tells it of every change
    (widgets with a computed style sheet are not told, hence this)."""

    changed = Signal()

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt API
        if event.type() == event.Type.PaletteChange:
            self.changed.emit()
        super().changeEvent(event)


_watcher: _Watcher | None = None


def on_palette_change(slot) -> None:
    """Call ``slot()`` whenever the application palette changes (connect a bound method of a
    QObject, so the connection ends with the object)."""
    global _watcher
    if _watcher is None:
        _watcher = _Watcher()
    _watcher.changed.connect(slot)


class _PaletteSheet(QObject):
    """Applies a style sheet that names palette roles again when the palette changes: Qt resolves
    ``palette(role)`` once, when it applies the sheet. A child of the widget: it goes with it."""

    def __init__(self, widget: QWidget, sheet: str):
        super().__init__(widget)
        self.widget, self.sheet = widget, sheet
        self.apply()
        on_palette_change(self.apply)

    def apply(self) -> None:
        self.widget.setStyleSheet("")  # the same text again would not be applied again
        self.widget.setStyleSheet(self.sheet)


def palette_style_sheet(widget: QWidget, sheet: str) -> None:
    """Give ``widget`` a style sheet whose ``palette(role)`` colours follow palette changes."""
    _PaletteSheet(widget, sheet)

