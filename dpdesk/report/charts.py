"""Report charts drawn with matplotlib, as inline SVG with a text alternative.

Every chart is a matplotlib ``Figure`` saved as SVG (``svg.fonttype = path``: the text is
drawn as outlines, so no font is needed to view it). The figure is made with the
object-oriented API, never ``pyplot``, so no GUI backend is ever loaded and nothing is
shared between threads. The SVG is deterministic for the same numbers (fixed hash salt, no
date), carries ``role="img"``, an ``aria-label`` and a ``<title>``, and a chart can be
followed by its numbers as a table (:func:`numbers_table`). The same SVG goes into the PDF
as vector graphics (:mod:`dpdesk.report.pdf`).

Artists get stable ids (``gid``): ``bars``, ``points``, ``series-N``, ``band-N``, ``marker``,
so a test can find what a chart drew.
"""

from __future__ import annotations

import html
import io
import os
import re
import sys

import numpy as np

PALETTE = ("#1f5f99", "#d1495b", "#2a9d55", "#e09f1f", "#7a4fa3", "#00798c", "#8c564b", "#555555")
MARKER_COLOUR = "#b3261e"
FIGURE_SIZE = (6.4, 3.0)  # inches: 640 × 300 px in a browser at 100 %
WIDE_FIGURE_SIZE = (8.0, 3.0)  # room on the right for a legend
_STYLE = {
    "svg.hashsalt": "dpdesk",  # ids in the SVG do not change from run to run
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",  # matplotlib ships it, so the outlines never depend on system fonts
    "font.size": 8.5,
    "axes.edgecolor": "#9aa8b5",
    "axes.grid": True,
    "grid.color": "#e6eaee",
    "grid.linewidth": 0.8,
    "axes.axisbelow": True,
    "xtick.color": "#333333",
    "ytick.color": "#333333",
}
_NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


def _matplotlib():
    """matplotlib, configured from dpdesk's data folder: its font cache lives there (with
    ``DPDESK_HOME`` set, nothing is written to the home directory) and a user's own
    matplotlibrc cannot change how reports look."""
    if "matplotlib" not in sys.modules:
        from ..paths import user_data_dir

        os.environ.setdefault("MPLCONFIGDIR", str(user_data_dir() / "matplotlib"))
    import matplotlib

    return matplotlib


MARGINS_INCHES = {"left": 0.85, "bottom": 0.5, "top": 0.12, "right": 0.15}
LEGEND_INCHES = 1.75  # extra room on the right of a chart with a legend


def _figure(size=FIGURE_SIZE, legend: bool = False):
    from matplotlib.figure import Figure

    # fixed margins rather than constrained layout, which draws every figure twice
    width, height = size
    right = MARGINS_INCHES["right"] + (LEGEND_INCHES if legend else 0.0)
    figure = Figure(figsize=size)
    figure.subplots_adjust(left=MARGINS_INCHES["left"] / width, right=1 - right / width,
                           bottom=MARGINS_INCHES["bottom"] / height, top=1 - MARGINS_INCHES["top"] / height)
    return figure, figure.add_subplot()


def _svg(figure, title: str) -> str:
    """The figure as an ``<svg>`` element to inline in HTML (no XML prolog), labelled with ``title``."""
    matplotlib = _matplotlib()
    buffer = io.StringIO()
    with matplotlib.rc_context(_STYLE):
        figure.savefig(buffer, format="svg", metadata=_NO_METADATA)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    label = html.escape(title, quote=True)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1)
    head_end = svg.index(">") + 1
    return f'<div class="plot">{svg[:head_end]}\n <title>{label}</title>{svg[head_end:]}</div>'


def _draw(draw, title: str, size=FIGURE_SIZE, legend: bool = False) -> str:
    """Run ``draw(figure, axes)`` under the report style and return the labelled SVG."""
    matplotlib = _matplotlib()
    with matplotlib.rc_context(_STYLE):
        figure, axes = _figure(size, legend)
        draw(figure, axes)
        return _svg(figure, title)


def histogram(counts, edges, x_label: str, y_label: str, *, markers=(), marker_label: str = "",
              title: str = "") -> str:
    """Bars of ``counts`` between ``edges``; red vertical lines at ``markers`` (e.g. the declared Δ)."""
    counts, edges = np.asarray(counts, dtype=np.float64), np.asarray(edges, dtype=np.float64)

    def draw(figure, axes):
        widths = np.diff(edges)
        axes.bar(edges[:-1], counts, width=widths * 0.96, align="edge", color=PALETTE[0], alpha=0.85, gid="bars")
        shown = [m for m in markers if edges[0] <= m <= edges[-1]]
        for value in shown:
            axes.axvline(value, color=MARKER_COLOUR, linewidth=2, gid="marker")
        if shown and marker_label:
            axes.text(0.99, 0.95, marker_label, transform=axes.transAxes, ha="right", va="top", color=MARKER_COLOUR)
        axes.set_xlim(edges[0], edges[-1])
        axes.set_ylim(0, max(float(counts.max()) * 1.05, 1.0) if counts.size else 1.0)
        axes.set_xlabel(x_label)
        axes.set_ylabel(y_label)
        axes.grid(axis="x", visible=False)

    return _draw(draw, title or f"histogram of {x_label}")


def scatter(x, y, x_label: str, y_label: str, *, title: str = "") -> str:
    """Points (x, y) on symmetric-log axes (skewed counts that may be negative) with the line y = x."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)

    def draw(figure, axes):
        low = float(min(x.min(), y.min())) if x.size else 0.0
        high = float(max(x.max(), y.max())) if x.size else 1.0
        axes.set_xscale("symlog", linthresh=1.0)
        axes.set_yscale("symlog", linthresh=1.0)
        axes.plot([low, high], [low, high], color="#9aa8b5", linewidth=1, gid="identity")
        axes.scatter(x, y, s=6, color=PALETTE[0], alpha=0.5, linewidths=0, gid="points")
        axes.set_xlabel(x_label + " (log scale)")
        axes.set_ylabel(y_label + " (log scale)")

    return _draw(draw, title or f"{y_label} against {x_label}")


def lines(series: list[dict], *, x_label: str, y_label: str, log_x: bool = False, log_y: bool = False,
          y_range: tuple[float, float] | None = None, markers: bool = True, title: str = "") -> str:
    """One line per series (``label``, ``x``, ``y``; a shaded band when ``low`` and ``high`` are given).

    Points that a log axis cannot show (zero, negative, not finite) are left out.
    """
    def usable(x, y, *extra):
        keep = np.isfinite(x) & np.isfinite(y)
        for values, log in ((x, log_x), (y, log_y)) + tuple((e, log_y) for e in extra):
            if log:
                keep &= values > 0
            keep &= np.isfinite(values)
        return keep

    def draw(figure, axes):
        if log_x:
            axes.set_xscale("log")
        if log_y:
            axes.set_yscale("log")
        for number, s in enumerate(series):
            colour = PALETTE[number % len(PALETTE)]
            x, y = np.asarray(s["x"], dtype=np.float64), np.asarray(s["y"], dtype=np.float64)
            if "low" in s and "high" in s:
                low, high = np.asarray(s["low"], dtype=np.float64), np.asarray(s["high"], dtype=np.float64)
                band = usable(x, y, low, high)
                if band.sum() > 1:
                    axes.fill_between(x[band], low[band], high[band], color=colour, alpha=0.15, linewidth=0,
                                      gid=f"band-{number}")
            good = usable(x, y)
            axes.plot(x[good], y[good], color=colour, linewidth=1.6, marker="o" if markers else None, markersize=3.5,
                      label=_shorten(str(s["label"]), 28), gid=f"series-{number}")
        if y_range is not None:
            axes.set_ylim(*y_range)
        axes.set_xlabel(x_label + (" (log scale)" if log_x else ""))
        axes.set_ylabel(y_label + (" (log scale)" if log_y else ""))
        if len(series) > 1:
            axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)

    size = WIDE_FIGURE_SIZE if len(series) > 1 else FIGURE_SIZE
    return _draw(draw, title or f"{y_label} against {x_label}", size, legend=len(series) > 1)


def numbers_table(header: list[str], rows: list[tuple], summary: str = "The numbers behind the chart") -> str:
    """A chart's numbers as a table a screen reader can read, folded away under ``summary``.

    ``rows`` hold already formatted, already escaped cell strings.
    """
    from .public import table

    return (f"<details><summary>{html.escape(summary)}</summary>\n"
            + table(rows, header, numeric=tuple(range(1, len(header)))) + "\n</details>")


def _shorten(text: str, length: int) -> str:
    return text if len(text) <= length else text[:length - 1] + "…"
