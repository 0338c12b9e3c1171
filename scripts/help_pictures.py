"""Draw the help's pictures: one small diagram per mechanism and a few for words of the glossary.

    python scripts/help_pictures.py [FOLDER]     (default: resources/help/pictures)

Plain SVG (rectangles, lines, circles, text), so that Qt's SVG renderer draws it offline and any
browser shows it too. The numbers are fixed, so the output is the same on every run
(tests/gui/test_help.py checks that the committed files are current). The colours are the ones
dpdesk.guidance names: the help window swaps ink, paper, muted and faint for the palette's own
colours, so the pictures read on light, dark and high-contrast desktops alike.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from dpdesk.guidance import PICTURE_ACCENTS, PICTURE_FAINT, PICTURE_INK, PICTURE_MUTED, PICTURE_PAPER

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 400, 180
INK, MUTED, FAINT, PAPER = PICTURE_INK, PICTURE_MUTED, PICTURE_FAINT, PICTURE_PAPER
BLUE, ORANGE, GREEN, PURPLE, SKY, VERMILLION = PICTURE_ACCENTS
FONT = "DejaVu Sans, Verdana, sans-serif"

# twelve items' true counts, in the order the data lists them, and the noise a release adds to them
COUNTS = [6, 11, 3, 9, 14, 2, 7, 10, 4, 1, 5, 2]
NOISE = [1.5, -2.0, 2.2, -1.0, 0.8, 2.4, -1.8, 1.1, -2.3, 1.9, -0.7, 2.0]
# sixteen cells of a sparse table: their true counts and noisy counts (most cells are empty)
CELLS = [0, 0, 9, 0, 0, 1, 0, 12, 0, 0, 0, 6, 0, 0, 3, 0]
CELL_NOISE = [1, -2, 1, 0, 3, -1, -1, -2, 0, 2, -3, 1, 0, 4, -1, -1]


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


class Svg:
    """A small SVG canvas with the few shapes the pictures need."""

    def __init__(self, title: str, width: int = WIDTH, height: int = HEIGHT):
        self.title, self.width, self.height = title, width, height
        self.parts: list[str] = []

    def _attrs(self, **attrs) -> str:
        out = []
        for key, value in attrs.items():
            if value is None:
                continue
            name = key.rstrip("_").replace("_", "-")
            out.append(f'{name}="{_num(value) if isinstance(value, float) else value}"')
        return " ".join(out)

    def rect(self, x, y, w, h, fill="none", stroke=None, width=1.0, dash=None, opacity=None, rx=None):
        self.parts.append(f"<rect {self._attrs(x=float(x), y=float(y), width=float(w), height=float(h), rx=rx, fill=fill, stroke=stroke, stroke_width=width if stroke else None, stroke_dasharray=dash, fill_opacity=opacity)}/>")

    def line(self, x1, y1, x2, y2, stroke=INK, width=1.0, dash=None):
        self.parts.append(f"<line {self._attrs(x1=float(x1), y1=float(y1), x2=float(x2), y2=float(y2), stroke=stroke, stroke_width=width, stroke_dasharray=dash)}/>")

    def circle(self, cx, cy, r, fill=BLUE, stroke=None, width=1.0):
        self.parts.append(f"<circle {self._attrs(cx=float(cx), cy=float(cy), r=float(r), fill=fill, stroke=stroke, stroke_width=width if stroke else None)}/>")

    def polyline(self, points, stroke=BLUE, width=2.0, dash=None):
        joined = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
        self.parts.append(f"<polyline {self._attrs(points=joined, fill='none', stroke=stroke, stroke_width=width, stroke_dasharray=dash)}/>")

    def text(self, x, y, content, size=11, anchor="start", fill=INK, bold=False, italic=False):
        content = content.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        self.parts.append(f"<text {self._attrs(x=float(x), y=float(y), font_family=FONT, font_size=size, text_anchor=anchor, fill=fill, font_weight='bold' if bold else None, font_style='italic' if italic else None)}>{content}</text>")

    def arrow(self, x1, y1, x2, y2, stroke=INK, width=1.2):
        self.line(x1, y1, x2, y2, stroke, width)
        angle = math.atan2(y2 - y1, x2 - x1)
        for side in (-1, 1):
            a = angle + math.pi + side * 0.45
            self.line(x2, y2, x2 + 7 * math.cos(a), y2 + 7 * math.sin(a), stroke, width)

    def render(self) -> str:
        title = self.title.replace("&", "&amp;").replace("<", "&lt;")
        body = "\n  ".join(self.parts)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" version="1.2" baseProfile="tiny" width="{self.width}" '
                f'height="{self.height}" viewBox="0 0 {self.width} {self.height}">\n  <title>{title}</title>\n'
                f"  {body}\n</svg>\n")


# -- shared pieces ---------------------------------------------------------------------------------
class Chart:
    """Bars on a baseline: item i at x(i), value v at y(v)."""

    def __init__(self, svg: Svg, left=24.0, right=376.0, base=150.0, unit=7.0, n=12):
        self.svg, self.left, self.right, self.base, self.unit, self.n = svg, left, right, base, unit, n
        self.step = (right - left) / n

    def x(self, i: int) -> float:
        return self.left + (i + 0.5) * self.step

    def y(self, value: float) -> float:
        return self.base - value * self.unit

    def axis(self):
        self.svg.line(self.left, self.base, self.right, self.base, INK, 1.0)

    def bars(self, values, fill=FAINT, stroke=MUTED, which=None, width=0.62):
        for i, v in enumerate(values):
            if which is not None and i not in which:
                continue
            top, bottom = sorted((self.y(v), self.base))
            self.svg.rect(self.x(i) - self.step * width / 2, top, self.step * width, bottom - top, fill, stroke)

    def dots(self, values, fill=BLUE, whisker=None):
        for i, v in enumerate(values):
            if whisker:
                half = whisker[i] if isinstance(whisker, (list, tuple)) else whisker
                self.svg.line(self.x(i), self.y(v - half), self.x(i), self.y(v + half), fill, 1.2)
            self.svg.circle(self.x(i), self.y(v), 3.4, fill)

    def segment(self, first: int, last: int, value: float, colour=BLUE, width=3.0):
        self.svg.line(self.left + first * self.step + 2, self.y(value), self.left + (last + 1) * self.step - 2,
                      self.y(value), colour, width)

    def band(self, first: int, last: int, fill=FAINT, top=None):
        top = self.base - 110 if top is None else top
        self.svg.rect(self.left + first * self.step + 1, top, (last - first + 1) * self.step - 2,
                      self.base - top, fill, opacity=0.45)


def legend(svg: Svg, x: float, y: float, entries):
    """(kind, colour, text) with kind 'bar', 'dot', 'line' or 'dash'; entries laid out left to right."""
    for kind, colour, text in entries:
        if kind == "bar":
            svg.rect(x, y - 9, 10, 10, FAINT, MUTED)
        elif kind == "dot":
            svg.circle(x + 5, y - 4, 3.4, colour)
        elif kind == "line":
            svg.line(x, y - 4, x + 12, y - 4, colour, 3.0)
        else:
            svg.line(x, y - 4, x + 12, y - 4, colour, 1.5, "4,3")
        svg.text(x + 16, y, text, 10.5)
        x += 24 + 6.2 * len(text)


def grouped(svg: Svg, values, groups, caption: str, noise=(0.6, -0.8, 0.5, -0.4)):
    chart = Chart(svg)
    for k, (first, last) in enumerate(groups):
        if k % 2 == 0:
            chart.band(first, last)
    chart.bars(values)
    chart.axis()
    for k, (first, last) in enumerate(groups):
        average = sum(values[first:last + 1]) / (last - first + 1)
        chart.segment(first, last, average + noise[k % len(noise)])
    legend(svg, 24, 18, [("bar", None, "true count"), ("line", BLUE, caption)])
    return chart


# -- the pictures ------------------------------------------------------------------------------------
def lpa() -> Svg:
    svg = Svg("LPA: noise of scale Δ/ε on every count")
    chart = Chart(svg)
    chart.bars(COUNTS)
    chart.axis()
    chart.dots([c + n for c, n in zip(COUNTS, NOISE)], BLUE, whisker=2.0)
    legend(svg, 24, 18, [("bar", None, "true count"), ("dot", BLUE, "published: count + noise of scale Δ/ε")])
    return svg


def alpa() -> Svg:
    svg = Svg("ALPA: one noisy average for every item")
    chart = Chart(svg)
    chart.bars(COUNTS)
    chart.axis()
    chart.segment(0, 11, sum(COUNTS) / len(COUNTS) + 0.3)
    legend(svg, 24, 18, [("bar", None, "true count"), ("line", BLUE, "one noisy average, published for every item")])
    return svg


def gs_r() -> Svg:
    svg = Svg("GS-R: random groups of Δ items, each given its noisy average")
    grouped(svg, COUNTS, [(0, 2), (3, 5), (6, 8), (9, 11)], "noisy average of a random group of Δ = 3")
    return svg


def _sample_grid(svg: Svg, mode: str) -> None:
    """A small people × items grid; the sample is whole rows (row sampling) or one item per row."""
    present = ["110100", "011010", "100011", "010110", "111000", "001101"]
    x0, y0, cell = 22, 46, 14
    svg.text(x0, 38, "people × items", 10.5)
    for r, row in enumerate(present):
        if mode == "row" and r in (1, 4):
            svg.rect(x0 - 3, y0 + r * cell - 2, 6 * cell + 2, cell, ORANGE, opacity=0.35)
        for c, flag in enumerate(row):
            if flag == "1":
                svg.circle(x0 + c * cell + 4, y0 + r * cell + 5, 3.0, MUTED)
    if mode == "column":
        for r, c in enumerate((1, 2, 5, 1, 0, 3)):
            svg.circle(x0 + c * cell + 4, y0 + r * cell + 5, 5.2, "none", ORANGE, 2.0)
    svg.text(x0, y0 + 6 * cell + 14, "sample: whole people" if mode == "row" else "sample: one item each", 10.5,
             fill=INK)
    svg.arrow(x0 + 6 * cell + 4, 90, x0 + 6 * cell + 26, 90)


def _sorted_groups(svg: Svg, caption: str, size: int = 3) -> None:
    values = sorted(COUNTS, reverse=True)
    chart = Chart(svg, left=140, right=384, unit=6.5)
    groups = [(k, min(k + size - 1, 11)) for k in range(0, 12, size)]
    for k, (first, last) in enumerate(groups):
        if k % 2 == 0:
            chart.band(first, last, top=40)
    chart.bars(values)
    chart.axis()
    for k, (first, last) in enumerate(groups):
        chart.segment(first, last, sum(values[first:last + 1]) / (last - first + 1) + (0.5, -0.6, 0.4, -0.3)[k % 4])
    svg.text(140, 18, caption, 10.5)
    svg.text(140, 32, "similar counts grouped, averages + noise (ε/2)", 10.5)


def gs_s_row() -> Svg:
    svg = Svg("GS-S with row sampling: a noisy sample of people sorts the items into groups")
    _sample_grid(svg, "row")
    _sorted_groups(svg, "items sorted by the sample's noisy counts (ε/2)")
    return svg


def gs_s_col() -> Svg:
    svg = Svg("GS-S with column sampling: one random item per person sorts the items into groups")
    _sample_grid(svg, "column")
    _sorted_groups(svg, "items sorted by the sample's noisy counts (ε/2)")
    return svg


def gs() -> Svg:
    svg = Svg("GS: the group size with the least estimated error")
    x0, y0, w, h = 22, 50, 96, 80
    svg.line(x0, y0 + h, x0 + w, y0 + h, INK)
    svg.line(x0, y0, x0, y0 + h, INK)
    sizes = np.arange(1, 13)
    error = 0.9 * (sizes - 4) ** 2 + 12 + 30 / sizes
    error = (error - error.min()) / (error.max() - error.min())
    points = [(x0 + 4 + (s - 1) * (w - 8) / 11, y0 + h - 6 - e * (h - 14)) for s, e in zip(sizes, error)]
    svg.polyline(points, ORANGE, 2.0)
    best = int(np.argmin(error))
    svg.line(points[best][0], y0, points[best][0], y0 + h, ORANGE, 1.2, "3,3")
    svg.text(points[best][0] + 3, y0 + 8, "w*", 10.5, fill=INK, bold=True)
    svg.text(x0, y0 - 12, "estimated error", 10.5)
    svg.text(x0 + w, y0 + h + 14, "group size w", 10.5, anchor="end")
    svg.arrow(x0 + w + 6, 90, x0 + w + 24, 90)
    _sorted_groups(svg, "every w tried on the noisy sample: w* = 4 wins", size=4)
    return svg


def ahp() -> Svg:
    svg = Svg("AHP: noisy counts sorted, the small ones set to 0, similar ones clustered")
    noisy = [c + n for c, n in zip(COUNTS, NOISE)]
    order = sorted(range(12), key=lambda i: noisy[i])
    values = [COUNTS[i] for i in order]
    chart = Chart(svg)
    clusters = [(0, 4), (5, 7), (8, 9), (10, 11)]
    for k, (first, last) in enumerate(clusters):
        if k % 2 == 0:
            chart.band(first, last)
    chart.bars(values)
    chart.axis()
    chart.dots([noisy[i] for i in order], ORANGE)
    theta = 4.5
    svg.line(chart.left, chart.y(theta), chart.right, chart.y(theta), VERMILLION, 1.2, "4,3")
    svg.text(chart.right, chart.y(theta) - 4, "θ: below it, set to 0", 10.5, anchor="end", fill=INK)
    for k, (first, last) in enumerate(clusters):
        chart.segment(first, last, sum(values[first:last + 1]) / (last - first + 1) + (0.3, -0.4, 0.5, -0.3)[k])
    legend(svg, 24, 18, [("bar", None, "true count"), ("dot", ORANGE, "noisy count"),
                         ("line", BLUE, "noisy cluster average")])
    return svg


def _fourier(values, keep: int) -> list[float]:
    spectrum = np.fft.rfft(np.asarray(values, dtype=float))
    spectrum[keep:] = 0
    return list(np.fft.irfft(spectrum, len(values)))


def _fpa(svg: Svg, caption: str) -> Chart:
    chart = Chart(svg)
    chart.bars(COUNTS)
    chart.axis()
    smooth = [v + n for v, n in zip(_fourier(COUNTS, 3), (0.4, 0.3, 0.1, -0.2, -0.4, -0.3, 0.0, 0.3, 0.5, 0.4,
                                                          0.2, 0.1))]
    fine = np.linspace(0, 11, 45)
    curve = np.interp(fine, np.arange(12), smooth)
    svg.polyline([(chart.left + (t + 0.5) * chart.step, chart.y(v)) for t, v in zip(fine, curve)], BLUE, 2.5)
    legend(svg, 24, 18, [("bar", None, "true count"), ("line", BLUE, caption)])
    return chart


def fpa() -> Svg:
    svg = Svg("FPA: the first ρ Fourier coefficients, noised, rebuild smooth counts")
    _fpa(svg, "rebuilt from the first ρ = 3 waves, with noise")
    return svg


def fpa_oracle() -> Svg:
    svg = Svg("FPA with the best ρ: chosen by the true error, not private")
    _fpa(svg, "FPA with the ρ that fits the truth best")
    svg.rect(172, 34, 206, 22, PAPER, VERMILLION, 1.5, rx=3)
    svg.text(275, 49, "✗ looks at the truth: not private", 10.5, anchor="middle", fill=INK, bold=True)
    return svg


ROWS = [3, 9, 5, 12, 2, 7]  # items per person


def _normalised_rows(svg: Svg, x0: float, theta: int, cell: float, title: str) -> None:
    svg.text(x0, 32, title, 10.5)
    for r, length in enumerate(ROWS):
        y = 42 + r * 19
        width = cell * min(1.0, theta / length)
        for k in range(length):
            svg.rect(x0 + k * width, y, width - (1.5 if width > 4 else 0.6), 13,
                     BLUE if length > theta else MUTED, opacity=min(1.0, theta / length))
    svg.line(x0 + theta * cell, 38, x0 + theta * cell, 42 + 6 * 19, VERMILLION, 1.5, "4,3")
    svg.text(x0 + theta * cell + 3, 42 + 6 * 19 + 10, "θ", 11, fill=INK, bold=True)


def dpsense() -> Svg:
    svg = Svg("DPSense: people with more than θ items are scaled down to count θ in all")
    cell = 11
    svg.text(22, 32, "items of each person", 10.5)
    for r, length in enumerate(ROWS):
        for k in range(length):
            svg.rect(22 + k * cell, 42 + r * 19, cell - 1.5, 13, MUTED)
    svg.line(22 + 6 * cell, 38, 22 + 6 * cell, 156, VERMILLION, 1.5, "4,3")
    svg.text(22 + 6 * cell + 3, 166, "θ chosen privately", 10.5, fill=INK)
    svg.arrow(166, 90, 196, 90)
    _normalised_rows(svg, 208, 6, cell, "each counts θ/length → noise θ/ε")
    svg.text(22, 16, "no declared Δ: the limit θ is chosen privately with 10% of ε", 10.5, italic=True)
    return svg


def dpsense_s() -> Svg:
    svg = Svg("DPSense-S: as DPSense, then every count scaled up by a private α between 1 and 2")
    _normalised_rows(svg, 22, 6, 11, "scaled down to θ")
    svg.arrow(150, 90, 178, 90)
    chart = Chart(svg, left=190, right=384, unit=8, n=6)
    after = [4.0, 6.5, 3.0, 9.0, 1.5, 5.0]
    chart.bars(after)
    chart.axis()
    alpha = 1.35
    for i, v in enumerate(after):
        chart.svg.line(chart.x(i), chart.y(v), chart.x(i), chart.y(v * alpha), BLUE, 1.2)
        chart.svg.circle(chart.x(i), chart.y(v * alpha), 3.4, BLUE)
    svg.text(190, 18, "counts × α (α = 1.35 here)", 10.5)
    svg.text(190, 32, "makes up for the scaling down", 10.5)
    return svg


def diff() -> Svg:
    svg = Svg("DIFF: each item's noise in proportion to a public weight γ")
    chart = Chart(svg, base=140)
    weights = [1, 3, 1, 2, 1, 4, 2, 1, 3, 1, 2, 1]
    chart.bars(COUNTS)
    chart.axis()
    chart.dots([c + n * w / 2 for c, n, w in zip(COUNTS, NOISE, weights)], BLUE,
               whisker=[0.9 * w for w in weights])
    for i, w in enumerate(weights):
        svg.circle(chart.x(i), 160, 1.6 + 1.3 * w, PURPLE)
    svg.text(chart.right, 176, "public weight γ of each item", 10, anchor="end")
    legend(svg, 24, 18, [("bar", None, "true count"), ("dot", BLUE, "published: more noise where γ is larger")])
    return svg


def _cell_table(svg: Svg, y: float, values, label: str, highlight=None, fill=None):
    svg.text(22, y + 14, label, 10.5)
    x0, w = 96, 17.5
    for i, v in enumerate(values):
        kept = highlight is None or i in highlight
        svg.rect(x0 + i * w, y, w - 1, 20, fill if (fill and kept) else "none", MUTED)
        svg.text(x0 + i * w + (w - 1) / 2, y + 14, str(v).replace("-", "−"), 10, anchor="middle",
                 fill=INK if kept else MUTED)


def geometric() -> Svg:
    svg = Svg("Geometric: whole-number noise on every one of the m cells, all published")
    _cell_table(svg, 40, CELLS, "true")
    noisy = [c + n for c, n in zip(CELLS, CELL_NOISE)]
    for i in range(16):
        svg.arrow(96 + i * 17.5 + 8, 64, 96 + i * 17.5 + 8, 88, MUTED, 1.0)
    _cell_table(svg, 92, noisy, "published", fill=FAINT)
    svg.text(22, 136, "every cell, the empty ones too, gets noise and is published:", 10.5)
    svg.text(22, 152, "exact, but as big as the whole table (m cells)", 10.5)
    return svg


def _noisy_cells(svg: Svg, kept, lines, caption: str, weights=None, ranks=None) -> Chart:
    noisy = [c + n for c, n in zip(CELLS, CELL_NOISE)]
    chart = Chart(svg, left=24, right=330, base=118, unit=5.2, n=16)
    for i, v in enumerate(noisy):
        on = i in kept
        top, bottom = sorted((chart.y(v), chart.base))
        svg.rect(chart.x(i) - 6, top, 12, max(bottom - top, 0.8), BLUE if on else FAINT, None if on else MUTED)
        if weights and i in weights:
            wtop = chart.y(weights[i] if v > 0 else -weights[i])
            top2, bottom2 = sorted((wtop, chart.base))
            svg.rect(chart.x(i) - 8, top2, 16, bottom2 - top2, "none", BLUE, 1.2, "3,2")
        if ranks and i in ranks:
            svg.text(chart.x(i), chart.y(max(v, 0)) - 4, str(ranks[i]), 10, anchor="middle", bold=True)
    chart.axis()
    for value, name, colour in lines:
        svg.line(chart.left, chart.y(value), chart.right, chart.y(value), colour, 1.3, "5,3")
        svg.text(chart.right + 4, chart.y(value) + 4, name, 11, fill=INK, bold=True)
    svg.rect(24, 160, 10, 10, BLUE)
    svg.text(38, 169, "published", 10.5)
    svg.rect(110, 160, 10, 10, FAINT, MUTED)
    svg.text(124, 169, "left out (reads as 0)", 10.5)
    svg.text(24, 16, caption, 10.5)
    return chart


def filter_() -> Svg:
    svg = Svg("Filter: only the cells whose noisy count is at least θ")
    _noisy_cells(svg, {2, 7, 11}, [(5, "θ", VERMILLION)], "noisy counts of all cells; published: those ≥ θ")
    return svg


def filter2() -> Svg:
    svg = Svg("Two-sided filter: cells whose noisy count is at least θ in size, either sign")
    _noisy_cells(svg, {2, 7, 11, 13}, [(4, "θ", VERMILLION), (-4, "−θ", VERMILLION)],
                 "published: noisy counts ≥ θ or ≤ −θ (noise cancels in sums)")
    return svg


def threshold() -> Svg:
    svg = Svg("Threshold sampling: kept with probability |v|/τ, weight at least τ")
    _noisy_cells(svg, {2, 7, 11, 13, 4}, [(8, "τ", ORANGE)], "kept at random, surely from τ up; dashed: weight τ",
                 weights={11: 8, 13: 8, 4: 8})
    return svg


def priority() -> Svg:
    svg = Svg("Priority sampling: exactly s cells with the largest priority")
    _noisy_cells(svg, {2, 7, 11, 14}, [], "s = 4 cells with the largest priority |v| ÷ random number",
                 ranks={7: 1, 2: 2, 11: 3, 14: 4})
    return svg


def filter_threshold() -> Svg:
    svg = Svg("Filter, then threshold sampling")
    _noisy_cells(svg, {2, 7, 13}, [(3, "θ", VERMILLION), (-3, "−θ", VERMILLION), (8, "τ", ORANGE)],
                 "below θ in size: dropped; the rest threshold-sampled with τ", weights={13: 8})
    return svg


def filter_priority() -> Svg:
    svg = Svg("Filter, then priority sampling")
    _noisy_cells(svg, {2, 7, 11}, [(3, "θ", VERMILLION), (-3, "−θ", VERMILLION)],
                 "below θ in size: dropped; then a priority sample of s = 3", ranks={7: 1, 2: 2, 11: 3})
    return svg


def dyadic() -> Svg:
    svg = Svg("Dyadic ranges: a tree of noisy range counts answers any range from a few nodes")
    leaves, x0, width, height = 8, 40, 40, 20
    chosen = {(0, 1), (1, 1), (1, 2), (0, 6)}  # (level, index): the range of cells 1–6
    for level in range(4):
        y = 128 - level * 30
        for j in range(leaves >> level):
            x = x0 + j * width * (1 << level)
            on = (level, j) in chosen
            svg.rect(x + 2, y, width * (1 << level) - 4, height, FAINT, BLUE if on else MUTED, 3.0 if on else 1.0,
                     rx=3)
            if level == 0:
                svg.text(x + width / 2, y + 14, str(j), 10, anchor="middle")
    svg.rect(x0 + width + 2, 154, 6 * width - 4, 4, ORANGE)
    svg.text(x0 + width, 172, "the range of cells 1 to 6 = 4 noisy nodes", 10.5)
    svg.text(22, 14, "L = 4 levels: cells, pairs, fours, eights", 10.5)
    svg.text(22, 28, "every node: its count + noise of scale L/ε", 10.5)
    return svg


def sketch() -> Svg:
    svg = Svg("Count sketch: cells hashed into w buckets with a sign, noise on every bucket")
    buckets = [2, 0, 2, 4, 1]
    signs = ["+", "−", "−", "+", "+"]
    for k, name in enumerate("abcde"):
        y = 22 + k * 26
        svg.rect(22, y, 50, 20, FAINT, MUTED, rx=3)
        svg.text(47, y + 14, f"cell {name}", 10, anchor="middle")
        svg.text(80, y + 15, signs[k], 13, bold=True)
        svg.line(94, y + 10, 250 + buckets[k] * 28 + 12, 92, MUTED, 1.0)
    for b in range(5):
        svg.rect(250 + b * 28, 92, 24, 24, SKY, INK, 1.0, opacity=0.5)
    svg.text(250, 134, "w buckets (one row: d = 1)", 10.5)
    svg.text(250, 150, "+ noise d/ε on each", 10.5)
    svg.text(22, 172, "a cell's count is read back from its bucket, times its sign", 10.5)
    return svg


def epsilon() -> Svg:
    svg = Svg("ε as odds: how far a 50/50 guess about one person can move")
    rows = [(0.1, "0.1"), (math.log(2), "0.69 (ln 2)"), (math.log(3), "1.1 (ln 3)"), (2.0, "2")]
    x0, w = 150, 190
    svg.text(22, 18, "ε", 11, bold=True)
    svg.text(x0, 18, "a 50/50 guess can become at most …", 10.5)
    for k, (value, name) in enumerate(rows):
        y = 34 + k * 34
        p = math.exp(value) / (1 + math.exp(value))
        svg.text(22, y + 14, f"ε = {name}", 10.5)
        svg.rect(x0, y, w, 18, FAINT, MUTED)
        svg.rect(x0, y, w * p, 18, BLUE)
        svg.line(x0 + w / 2, y - 3, x0 + w / 2, y + 21, INK, 1.2, "3,2")
        percent = round(p * 100)
        svg.text(x0 + w + 6, y + 13, f"{percent}/{100 - percent}", 10.5, bold=True)
    svg.text(x0 + w / 2, 176, "50/50", 10, anchor="middle")
    return svg


def truncation() -> Svg:
    svg = Svg("Truncation: people with more than Δ items keep a random Δ of them")
    rows = [(3, ()), (8, (1, 4, 6)), (5, ()), (7, (0, 5)), (2, ())]
    cell = 22
    svg.text(22, 18, "Δ = 5: each person keeps at most 5 items, chosen at random", 10.5)
    for r, (length, dropped) in enumerate(rows):
        y = 32 + r * 26
        svg.text(22, y + 14, f"person {r + 1}", 10.5)
        for k in range(length):
            x = 96 + k * cell
            if k in dropped:
                svg.rect(x, y, cell - 4, 18, "none", MUTED, 1.0, "3,2")
                svg.line(x + 3, y + 3, x + cell - 7, y + 15, VERMILLION, 1.5)
                svg.line(x + cell - 7, y + 3, x + 3, y + 15, VERMILLION, 1.5)
            else:
                svg.rect(x, y, cell - 4, 18, BLUE, rx=2)
    svg.rect(96, 166, 12, 10, BLUE, rx=2)
    svg.text(112, 175, "kept", 10.5)
    svg.rect(160, 166, 12, 10, "none", MUTED, 1.0, "3,2")
    svg.text(176, 175, "dropped before any noise", 10.5)
    return svg


def margin_of_error() -> Svg:
    svg = Svg("Margin of error: the true count is within ± margin95 of the published value, 95 times in 100")
    x0, x1, y = 30, 370, 100
    svg.line(x0, y, x1, y, INK)
    for k in range(0, 11):
        x = x0 + k * (x1 - x0) / 10
        svg.line(x, y - 4, x, y + 4, INK)
        svg.text(x, y + 18, str(100 + 2 * k), 10, anchor="middle")
    published, margin = 108, 5
    scale = (x1 - x0) / 20

    def at(v):
        return x0 + (v - 100) * scale
    svg.rect(at(published - margin), y - 30, 2 * margin * scale, 16, SKY, opacity=0.45)
    svg.line(at(published - margin), y - 36, at(published - margin), y - 8, BLUE, 1.5)
    svg.line(at(published + margin), y - 36, at(published + margin), y - 8, BLUE, 1.5)
    svg.circle(at(published), y - 22, 5, BLUE)
    svg.text(at(published), y - 44, "published 108, margin95 = 5", 10.5, anchor="middle", bold=True)
    svg.circle(at(106), y, 4.5, ORANGE)
    svg.circle(x0 + 4, y + 36, 4.5, ORANGE)
    svg.text(x0 + 14, y + 40, "true count (unknown): inside the margin 95 times in 100", 10.5)
    return svg


def privacy() -> Svg:
    svg = Svg("Differential privacy: the release is almost as likely with or without you")
    x0, x1, base = 30, 370, 140
    scale = 2.2

    def curve(centre):
        xs = np.linspace(-6, 8, 120)
        ys = np.exp(-np.abs(xs - centre) / scale)
        return [(x0 + (x + 6) / 14 * (x1 - x0), base - 95 * y) for x, y in zip(xs, ys)]
    svg.polyline(curve(0.0), BLUE, 2.5)
    svg.polyline(curve(1.0), ORANGE, 2.5, "6,3")
    svg.line(x0, base, x1, base, INK)
    svg.text(200, 160, "published count", 10.5, anchor="middle")
    legend(svg, 30, 18, [("line", BLUE, "chance of each release, data without you"),
                         ("dash", ORANGE, "with you")])
    svg.text(200, 176, "the two curves differ by at most a factor e^ε everywhere", 10.5, anchor="middle")
    return svg


PICTURES = {
    "lpa": lpa, "alpa": alpa, "gs-r": gs_r, "gs-s-row": gs_s_row, "gs-s-col": gs_s_col, "gs": gs, "ahp": ahp,
    "fpa": fpa,
    "fpa-oracle": fpa_oracle, "dpsense": dpsense, "dpsense-s": dpsense_s, "diff": diff, "geometric": geometric,
    "filter": filter_, "filter2": filter2, "threshold": threshold, "priority": priority,
    "filter-threshold": filter_threshold, "filter-priority": filter_priority, "dyadic": dyadic, "sketch": sketch,
    "epsilon": epsilon, "truncation": truncation, "margin-of-error": margin_of_error, "privacy": privacy,
}


def pictures() -> dict[str, str]:
    """Every picture's SVG text, by file name (without .svg)."""
    return {name: draw().render() for name, draw in PICTURES.items()}


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in pictures().items():
        (folder / f"{name}.svg").write_text(text, encoding="utf-8")
        print(folder / f"{name}.svg")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "resources" / "help" / "pictures")
