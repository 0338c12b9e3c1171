"""Colours come from the palette: under a dark and a high-contrast palette (and the light one) every
banner's text reaches a contrast of 4.5 on its background (WCAG AA), no style sheet holds a
background that text cannot be read on, plots take the palette's base and text, and a change of
palette restyles what is already on screen. Plus the --theme option and DPDESK_THEME."""

import re

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QLabel, QWidget

import dpdesk
from dpdesk import cli
from dpdesk.data.domain import DomainDeclaration
from dpdesk.errors import ParameterError
from dpdesk.gui import theme
from dpdesk.gui.main_window import MainWindow
from dpdesk.gui.widgets import Banner, InternalBadge, ThemedPlot, colour, error_text
from dpdesk.gui.wizard import ImportWizard
from dpdesk.paths import sample_path
from tests.gui.test_app import tick

ROLES = {"window": QPalette.Window, "window-text": QPalette.WindowText, "base": QPalette.Base,
         "alternate-base": QPalette.AlternateBase, "text": QPalette.Text, "button": QPalette.Button,
         "button-text": QPalette.ButtonText, "mid": QPalette.Mid, "dark": QPalette.Dark, "light": QPalette.Light,
         "highlight": QPalette.Highlight, "highlighted-text": QPalette.HighlightedText}
DECLARATION = re.compile(r"(?<![-\w])(background(?:-color)?|color)\s*:\s*([^;}]+)")
COLOUR_IN_VALUE = re.compile(r"palette\([\w-]+\)|#[0-9a-fA-F]{3,8}\b|rgba?\([^)]*\)|\b[a-z]+\b")


def resolve(value: str, palette: QPalette) -> QColor | None:
    """The colour a style sheet value names (palette(role), #hex, rgb(), a colour name), or None."""
    for token in COLOUR_IN_VALUE.findall(value.strip()):
        if token.startswith("palette("):
            return palette.color(ROLES[token[8:-1]])
        if token.startswith("rgb"):
            parts = [float(p) for p in re.findall(r"[\d.]+", token)[:3]]
            return QColor.fromRgb(*(int(p) for p in parts))
        if QColor.isValidColorName(token):
            return QColor(token)
    return None


def sheet_colours(sheet: str, palette: QPalette) -> tuple[list[QColor], QColor | None]:
    """(backgrounds, text colour) declared in a widget's style sheet."""
    backgrounds, text = [], None
    for prop, value in DECLARATION.findall(sheet):
        resolved = resolve(value, palette)
        if resolved is None:
            continue
        if prop == "color":
            text = resolved
        else:
            backgrounds.append(resolved)
    return backgrounds, text


@pytest.fixture
def restore_palette(qapp):
    saved = QPalette(qapp.palette())
    yield
    qapp.setPalette(saved)
    QApplication.processEvents()


def populated_window(qtbot):
    """A main window with the sample loaded, mechanisms ticked, the guide and the Help window open."""
    from dpdesk.gui.app import make_app

    make_app()
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    data = dpdesk.load(sample_path())
    window.state.set_dataset(data, {"path": str(sample_path()), "format": "transactions"}, "groceries",
                             DomainDeclaration("public-data"))
    tick(window, {"lpa", "gs"})
    window.start_guide()
    window.show_help("lpa")
    return window


def every_widget(*tops: QWidget) -> list[QWidget]:
    return [w for top in tops for w in [top, *top.findChildren(QWidget)]]


@pytest.mark.parametrize("name", ["dark", "high-contrast", "light"])
def test_text_is_readable_on_every_background_under_the_theme(name, qtbot, qapp, dpdesk_home, restore_palette):
    theme.apply_theme(qapp, name)
    window = populated_window(qtbot)
    wizard = ImportWizard(None, str(sample_path()))
    qtbot.addWidget(wizard)
    palette = qapp.palette()
    widgets = every_widget(window, wizard)
    banners = [w for w in widgets if isinstance(w, Banner)]
    assert len(banners) >= 6  # compare, release, plan, configure, wizard …
    for banner in banners:
        for kind in Banner.KINDS:  # each banner, in each of its kinds
            banner.set_kind(kind)
            tint = banner.colours()
            assert theme.contrast(tint.text, tint.background) >= 4.5, (name, kind, tint)
            assert tint.background.name() in banner.styleSheet() and tint.text.name() in banner.styleSheet()
    checked = 0
    for widget in widgets:
        sheet = widget.styleSheet()
        if not sheet:
            continue
        backgrounds, text = sheet_colours(sheet, palette)
        on = text or palette.color(QPalette.WindowText)
        for background in backgrounds:
            checked += 1
            assert theme.contrast(on, background) >= 4.5, (name, type(widget).__name__, sheet)
            if name != "light":  # no light patch on a dark desktop, whatever text it carries
                assert theme.luminance(background) < 0.2, (name, type(widget).__name__, sheet)
        if text is not None and not backgrounds:
            assert theme.contrast(text, palette.color(QPalette.Window)) >= 4.5, (name, sheet)
    assert checked >= 8
    for label in (w for w in widgets if isinstance(w, QLabel)):
        for value in re.findall(r"color\s*:\s*(#[0-9a-fA-F]{6})", label.text()):
            assert theme.contrast(QColor(value), palette.color(QPalette.Window)) >= 4.5, (name, label.text())
    error = re.search(r"#[0-9a-fA-F]{6}", error_text("x")).group(0)
    assert theme.contrast(QColor(error), palette.color(QPalette.Window)) >= 4.5


@pytest.mark.parametrize("name", ["dark", "high-contrast"])
def test_a_banner_is_painted_in_the_palette_colours(name, qtbot, qapp, restore_palette):
    theme.apply_theme(qapp, name)
    banner = Banner("⚠ <b>These plots use the true data</b>", "warning")
    qtbot.addWidget(banner)
    banner.resize(400, 60)
    banner.show()
    qtbot.waitExposed(banner)
    image = banner.grab().toImage()
    painted = QColor(image.pixelColor(image.width() // 2, 4))  # inside the border, in the padding
    assert abs(painted.red() - banner.colours().background.red()) <= 2
    assert abs(painted.green() - banner.colours().background.green()) <= 2
    assert theme.luminance(painted) < 0.2  # a dark strip, not a light one


@pytest.mark.parametrize("name", ["dark", "high-contrast", "light"])
def test_plots_take_the_palette_base_and_text(name, qtbot, qapp, dpdesk_home, restore_palette):
    theme.apply_theme(qapp, name)
    window = populated_window(qtbot)
    base, text = qapp.palette().color(QPalette.Base), qapp.palette().color(QPalette.Text)
    plots = window.findChildren(pg.PlotWidget)
    assert len(plots) >= 6
    for plot in plots:
        assert plot.backgroundBrush().color() == base
        for axis in ("left", "bottom"):
            assert plot.getAxis(axis).textPen().color() == text
    assert theme.contrast(text, base) >= 4.5
    for index in range(8):  # every series colour shows on the plot background (black becomes the text colour)
        assert theme.contrast(QColor(colour(index)), base) >= theme.GRAPHICS_CONTRAST


def test_a_change_of_palette_restyles_banners_badges_and_plots(qtbot, qapp, restore_palette):
    theme.apply_theme(qapp, "light")
    banner, badge, plot, label = Banner("note", "info"), InternalBadge(), ThemedPlot(), QLabel("ledger")
    theme.palette_style_sheet(label, "QLabel {background:palette(alternate-base);}")
    for widget in (banner, badge, plot, label):
        qtbot.addWidget(widget)
        widget.show()
    label.resize(200, 60)
    before = label.grab().toImage().pixelColor(190, 50)  # away from the text
    light_sheet = banner.styleSheet()
    assert theme.luminance(banner.colours().background) > 0.5
    theme.apply_theme(qapp, "dark")
    QApplication.processEvents()
    assert banner.styleSheet() != light_sheet
    assert theme.luminance(banner.colours().background) < 0.2
    assert banner.colours().background.name() in banner.styleSheet()
    assert badge.colours().text.name() in badge.styleSheet()
    assert plot.backgroundBrush().color() == qapp.palette().color(QPalette.Base)
    after = label.grab().toImage().pixelColor(190, 50)  # Qt resolves palette(role) when the sheet is applied
    assert after == qapp.palette().color(QPalette.AlternateBase) and after != before


def test_contrast_arithmetic():
    assert theme.contrast(QColor("black"), QColor("white")) == pytest.approx(21.0)
    assert theme.contrast(QColor("#777777"), QColor("#777777")) == pytest.approx(1.0)
    for background in ("#FFFFFF", "#1E1E1E", "#777777", "#E69F00"):
        for colour_name in ("#F0E442", "#0072B2", "#888888"):
            fixed = theme.readable(QColor(colour_name), QColor(background))
            assert theme.contrast(fixed, QColor(background)) >= 4.5
    kept = theme.readable(QColor("#000000"), QColor("#FFFFFF"))
    assert kept == QColor("#000000")  # already readable: unchanged


def test_the_theme_comes_from_the_option_or_the_environment(monkeypatch):
    assert cli.THEMES == theme.THEMES
    args = cli.build_parser().parse_args(["gui", "--theme", "high-contrast"])
    assert args.theme == "high-contrast"
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["gui", "--theme", "purple"])
    monkeypatch.delenv(theme.THEME_VARIABLE, raising=False)
    assert theme.chosen_theme(None) == "system"
    monkeypatch.setenv(theme.THEME_VARIABLE, "Dark")
    assert theme.chosen_theme(None) == "dark"
    assert theme.chosen_theme("light") == "light"  # the option wins
    monkeypatch.setenv(theme.THEME_VARIABLE, "purple")
    with pytest.raises(ParameterError, match="Unknown theme"):
        theme.chosen_theme(None)
    assert theme.theme_palette("system") is None
    dark = theme.theme_palette("dark")
    assert theme.is_dark(dark) and not theme.is_dark(theme.theme_palette("light"))
    high = theme.theme_palette("high-contrast")
    assert theme.contrast(high.color(QPalette.Text), high.color(QPalette.Base)) == pytest.approx(21.0)
