"""The internal report: everything about a release that used the true data. NOT for publication.

Every part of it is labelled: a banner at the top and the bottom, a label on every
section heading, the page title, and (when printed from a browser) a fixed header and
footer on every printed page. It holds the true-data summary, the distribution of items
per person against the declared bound, how many people were truncated, the realised
error of this release against the truth (next to the error the public report promised),
the mechanism's diagnostics, and the results of a comparison run if one is given.

Plots are inline SVG drawn here in plain Python (no Qt outside dpdesk/gui, no network),
so the HTML file is self-contained.
"""

from __future__ import annotations

import math

import numpy as np

from .public import esc, fmt, page, percent, table

LABEL = "INTERNAL — NOT FOR PUBLICATION"
BANNER_TEXT = (f"{LABEL}: this report contains values computed from the true data. Keep it on this machine; "
               "never publish or share it. The public privacy report is the one to publish.")
_SUMMARY_LABELS = {
    "rows": "rows (people)", "columns": "columns (items or cells)", "nonzeros": "non-zero cells",
    "density": "density", "max_row_count": "most items of one person", "mean_row_count": "mean items per person",
    "avg_column_count": "average count per column",
}
_METRIC_LABELS = {
    "mae": "mean absolute error", "mre": "mean relative error (with sanity bound)",
    "topk_mae": "top-k mean absolute error", "topk_mre": "top-k mean relative error",
    "topk_accuracy": "top-k accuracy (share of the true top k found)",
}
_METRIC_SHORT = {"mae": "MAE", "mre": "MRE", "topk_mae": "top-k MAE", "topk_mre": "top-k MRE",
                 "topk_accuracy": "top-k accuracy"}
PALETTE = ("#1f5f99", "#d1495b", "#2a9d55", "#e09f1f", "#7a4fa3", "#00798c", "#8c564b", "#555555")
MAX_SCATTER_POINTS = 4000
MAX_LINE_POINTS = 2000
MAX_MARKED_POINTS = 200
TOP_ITEMS = 20


def internal_report_html(data, release, comparison=None) -> str:
    """The internal report of ``release`` made from ``data`` (and an optional comparison)."""
    name = release.dataset_name or getattr(data, "name", "dataset")
    body = [
        f'<div class="print-label top">{esc(LABEL)}</div>',
        f'<p class="internal-banner">{esc(BANNER_TEXT)}</p>',
        "<h1>Internal report</h1>",
        f'<p class="subtitle">{esc(name)} · {esc(release.report.get("mechanism", {}).get("name", release.mechanism))}'
        f" · ε = {esc(fmt(release.epsilon))} · {esc(release.created)}</p>",
        _identification(data, release),
        _data_summary(data, release),
        _truncation(data, release),
        _realised_error(data, release),
        _diagnostics(release),
        _comparison(comparison),
        f'<p class="internal-banner">{esc(BANNER_TEXT)}</p>',
        f'<div class="print-label bottom">{esc(LABEL)}</div>',
    ]
    return page(f"{LABEL} — internal report — {name}", "\n".join(p for p in body if p), body_class="internal")


def _section(title: str) -> str:
    return f'<h2>{esc(title)}</h2><p class="internal-section-label">{esc(LABEL)}</p>'


def _identification(data, release) -> str:
    report = release.report
    rows = [
        ("Dataset", esc(release.dataset_name or getattr(data, "name", ""))),
        ("Dataset fingerprint", f'<span class="hash">{esc(getattr(data, "fingerprint", ""))}</span>'),
        ("Mechanism", esc(report.get("mechanism", {}).get("name", release.mechanism))),
        ("ε", esc(fmt(release.epsilon))),
        ("Parameters", esc(fmt(release.params))),
        ("Randomness", esc(release.randomness)),
        ("Made", esc(release.created)),
    ]
    if report.get("ledger"):
        rows.append(("Budget ledger entry", f"#{esc(report['ledger']['entry'])}"))
    return _section("The release") + table(rows)


def _data_summary(data, release) -> str:
    summary = data.summary()
    rows = [(esc(_SUMMARY_LABELS.get(key, key)), esc(fmt(value))) for key, value in summary.items()]
    parts = [_section("The true data"),
             "<p>Figures computed from the records themselves. None of them is in the public report.</p>",
             table(rows, ["Figure", "Value"], numeric=(1,))]
    if data.kind == "incidence" and data.n_rows:
        counts, edges = _integer_histogram(data.row_counts)
        bound = release.params.get("bound")
        parts.append(_histogram_svg(counts, edges, "items per person", "people", marker=bound,
                                    marker_label=f"declared Δ = {bound}" if bound else ""))
        parts.append('<p class="caption">How many items each person has. '
                     + ("People to the right of the red line were truncated to Δ items." if bound else
                        "No bound Δ was declared for this mechanism.") + "</p>")
    return "\n".join(parts)


def _truncation(data, release) -> str:
    bound = release.params.get("bound")
    rows = [(esc(key.replace("_", " ")), esc(fmt(value))) for key, value in release.internal.items()]
    if data.kind == "incidence" and bound:
        row_counts = data.row_counts
        over = row_counts > bound
        rows.append(("people with more than Δ items", esc(f"{int(over.sum()):,} ({100 * over.mean():.3g}%)")))
        rows.append(("items removed by truncation", esc(f"{int(np.maximum(row_counts - bound, 0).sum()):,} of "
                                                          f"{int(row_counts.sum()):,}")))
    if not rows:
        return ""
    explanation = ("<p>Truncation keeps a uniformly random Δ of a longer row's items; it biases the counts "
                   "downwards by the amounts shown.</p>" if data.kind == "incidence" and bound else "")
    return (_section("Truncation and other true-data facts of this run") + explanation
            + table(rows, ["Fact", "Value"], numeric=(1,)))


def _realised_error(data, release) -> str:
    parts = [_section("Realised error of this release")]
    if data.kind == "incidence" and release.values is not None:
        from ..evaluation.metrics import evaluate

        truth = data.column_counts.astype(np.float64)
        noisy = np.asarray(release.values, dtype=np.float64)
        metrics = evaluate(data, release)
        rows = [(esc(_METRIC_LABELS.get(k, k)), esc(fmt(v))) for k, v in metrics.items()]
        parts.append("<p>Against the true counts before any truncation or scaling of rows, so the bias those "
                     "steps cause is included.</p>")
        parts.append(table(rows, ["Metric", "Value"], numeric=(1,)))
        parts.append(_promised_vs_realised(release, noisy - truth))
        parts.append(_scatter_svg(truth, noisy))
        parts.append('<p class="caption">True count (across) against released count (up) per item; the grey '
                     "line is where they are equal."
                     + (f" A deterministic sample of {MAX_SCATTER_POINTS:,} of the {truth.size:,} items is shown."
                        if truth.size > MAX_SCATTER_POINTS else "") + "</p>")
        parts.append(_top_items(data, truth, noisy))
        return "\n".join(parts)
    try:
        from ..evaluation.metrics import evaluate

        metrics = evaluate(data, release)
    except ModuleNotFoundError as error:  # the sparse-summary workloads are a separate module
        parts.append(f"<p>The error measures for this kind of release are not available ({esc(error.name)}).</p>")
        return "\n".join(parts)
    rows = [(esc(str(k).replace("_", " ")), esc(fmt(v))) for k, v in metrics.items()]
    parts.append(table(rows, ["Measure", "Value"], numeric=(1,)))
    return "\n".join(parts)


def _promised_vs_realised(release, errors: np.ndarray) -> str:
    expected = release.report.get("expected_error") or {}
    within = expected.get("within_95")
    if within is None or errors.size == 0:
        return ""
    share = float(np.mean(np.abs(errors) <= within))
    return ("<p>The public report says 95% of counts lie within ±" + esc(f"{within:,.4g}") + " of the truth; in this "
            f"release {esc(percent(share))} do. A much lower share points at truncation bias (Δ below many "
            "people's item counts) or at clamping.</p>"
            + _histogram_svg(*_error_histogram(errors), "released − true count", "items",
                             marker=(-within, within), marker_label=f"±{within:,.4g}"))


def _integer_histogram(values: np.ndarray, most_bins: int = 60):
    """Counts of whole numbers in bins of equal whole-number width (so no bar holds more values than another)."""
    top = int(values.max()) if values.size else 0
    width = max(1, math.ceil((top + 1) / most_bins))
    edges = np.arange(0, top + width + 1, width)
    counts, _ = np.histogram(values, bins=edges)
    return counts, edges


def _error_histogram(errors: np.ndarray, bins: int = 60):
    low, high = float(errors.min()), float(errors.max())
    if low == high:
        low, high = low - 0.5, high + 0.5
    counts, edges = np.histogram(errors, bins=bins, range=(low, high))
    return counts, edges


def _top_items(data, truth: np.ndarray, noisy: np.ndarray) -> str:
    order = np.lexsort((np.arange(truth.size), -truth))[:TOP_ITEMS]
    rows = [(esc(data.item_labels[j]), esc(fmt(int(truth[j]))), esc(fmt(noisy[j])), esc(fmt(noisy[j] - truth[j])))
            for j in order]
    return (f"<h3>The {len(rows)} items with the largest true counts</h3>"
            + table(rows, ["Item", "True count", "Released", "Error"], numeric=(1, 2, 3)))


def _diagnostics(release) -> str:
    if not release.diagnostics:
        return ""
    parts = [_section("Mechanism diagnostics")]
    for key, diagnostic in release.diagnostics.items():
        title = getattr(diagnostic, "title", "") or str(key).replace("_", " ")
        parts.append(f"<h3>{esc(title)}" + (" (uses the true data)" if getattr(diagnostic, "internal", True) else "")
                     + "</h3>")
        parts.append(_diagnostic_body(diagnostic))
        caption = getattr(diagnostic, "caption", "")
        if caption:
            parts.append(f'<p class="caption">{esc(caption)}</p>')
    return "\n".join(parts)


def _diagnostic_body(diagnostic) -> str:
    """One line chart per series that runs along the x series, and a table of single values.

    ``diagnostic.x`` names the x series (or, as a label, describes the first series);
    ``diagnostic.y`` labels the first y series.
    """
    data = getattr(diagnostic, "data", {}) or {}
    x_name, y_name = getattr(diagnostic, "x", "") or "", getattr(diagnostic, "y", "") or ""
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in data.items() if _is_numeric_series(v)}
    x_key = x_name if x_name in arrays else next(iter(arrays), None)
    parts = []
    if x_key is not None:
        x = arrays[x_key]
        # x spanning orders of magnitude (θ from 1 to d) reads better on a log scale
        wide = bool(np.all(x[np.isfinite(x)] > 0) and np.nanmax(x) >= 100 * np.nanmin(x))
        along = [(k, y) for k, y in arrays.items() if k != x_key and y.shape == x.shape]
        for number, (key, y) in enumerate(along):
            label = key.replace("_", " ")
            xs, ys = _thin(x, y, log=wide)
            parts.append(_line_chart_svg([{"label": label, "x": xs, "y": ys}], x_label=x_name or x_key,
                                         y_label=y_name if number == 0 and y_name else label, log_x=wide,
                                         log_y=False, markers=xs.size <= MAX_MARKED_POINTS))
    scalars = [(esc(k), esc(fmt(v))) for k, v in data.items() if not _is_numeric_series(v)]
    if scalars:
        parts.append(table(scalars, ["Quantity", "Value"]))
    return "\n".join(parts)


def _thin(x: np.ndarray, y: np.ndarray, log: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """At most about MAX_LINE_POINTS points, always keeping the highest and lowest y.

    Evenly spread by position, or (``log``, for an increasing x drawn on a log scale) by
    the logarithm of the position, so the start of the range keeps every point.
    """
    if x.size <= MAX_LINE_POINTS:
        return x, y
    spread = np.geomspace(1, x.size, MAX_LINE_POINTS) - 1 if log else np.linspace(0, x.size - 1, MAX_LINE_POINTS)
    finite = np.where(np.isfinite(y), y, np.nan)
    extremes = [int(np.nanargmax(finite)), int(np.nanargmin(finite))] if np.isfinite(finite).any() else []
    keep = np.unique(np.concatenate([spread.astype(np.int64), extremes]))
    return x[keep], y[keep]


def _is_numeric_series(value) -> bool:
    if isinstance(value, (str, bytes, dict)):
        return False
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return array.ndim == 1 and array.size > 1


def _comparison(comparison) -> str:
    if comparison is None or comparison.summary is None or comparison.summary.empty:
        return ""
    summary = comparison.summary
    parts = [_section("Comparison on the true data"),
             '<p class="warning">These results were computed on the true data. Choosing the mechanism or a '
             "parameter because it did best here is itself a use of the data that the release's ε does not "
             "cover; the public report states how the mechanism was chosen.</p>",
             f"<p>Seed {esc(comparison.seed)}; mean over repeats with a 95% confidence band"
             + (" (the run was cancelled before it finished)" if comparison.cancelled else "") + ".</p>"]
    for metric, rows in summary.groupby("metric", sort=False):
        series = []
        for label, group in rows.groupby("label", sort=False):
            group = group.sort_values("epsilon")
            series.append({"label": str(label), "x": group["epsilon"].to_numpy(float),
                           "y": group["mean"].to_numpy(float), "low": group["ci_low"].to_numpy(float),
                           "high": group["ci_high"].to_numpy(float)})
        positive = all(np.all(s["y"][np.isfinite(s["y"])] > 0) for s in series)
        title = _METRIC_LABELS.get(metric, str(metric))
        parts.append(f"<h3>{esc(title)} against ε</h3>")
        parts.append(_line_chart_svg(series, x_label="ε", y_label=_METRIC_SHORT.get(metric, str(metric)),
                                     log_x=True, log_y=positive and metric != "topk_accuracy",
                                     y_range=(0.0, 1.0) if metric == "topk_accuracy" else None))
        table_rows = [(esc(r.label), esc(fmt(r.epsilon)), esc(fmt(r.mean)), esc(f"{fmt(r.ci_low)} … {fmt(r.ci_high)}"),
                       esc(fmt(int(r.repeats)))) for r in rows.itertuples()]
        parts.append(table(table_rows, ["Mechanism", "ε", "Mean", "95% interval", "Repeats"], numeric=(1, 2, 4)))
    return "\n".join(parts)


# -- inline SVG plots ------------------------------------------------------------------------------
_W, _H = 640, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 20, 16, 46
_LEGEND = 170  # room on the right of line charts for the legend


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return ticks


def _log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten in [low, high] (with 2 and 5 when the range spans less than two decades)."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    multipliers = (1, 2, 5) if math.log10(high / low) <= 2 else (1,)
    ticks = [m * 10.0 ** e for e in range(first, last + 1) for m in multipliers]
    return [t for t in ticks if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)] or [low, high]


class _Axis:
    """Maps data values to SVG coordinates: linear, log10, or symmetric log (sign·log10(1 + |v|))."""

    def __init__(self, low: float, high: float, start: float, stop: float, scale: str = "linear",
                 pad: float = 0.0):
        if scale == "log":
            low, high = max(low, 1e-300), max(high, 1e-300)
        if high <= low:
            spread = abs(low) * 0.1 or 1.0
            low, high = (low / 2, high * 2) if scale == "log" else (low - spread, high + spread)
        self.scale, self.start, self.stop = scale, start, stop
        lo, hi = self._forward(low), self._forward(high)
        margin = (hi - lo) * pad
        self._lo, self._hi = lo - margin, hi + margin
        self.low, self.high = self._inverse(self._lo), self._inverse(self._hi)

    def _forward(self, value):
        value = np.asarray(value, dtype=np.float64)
        if self.scale == "log":
            return np.log10(value)
        if self.scale == "symlog":
            return np.sign(value) * np.log10(1.0 + np.abs(value))
        return value

    def _inverse(self, value: float) -> float:
        if self.scale == "log":
            return 10.0 ** value
        if self.scale == "symlog":
            return math.copysign(10.0 ** abs(value) - 1.0, value)
        return value

    def __call__(self, value):
        fraction = (self._forward(value) - self._lo) / (self._hi - self._lo)
        return self.start + fraction * (self.stop - self.start)

    def ticks(self) -> list[float]:
        if self.scale == "log":
            return _log_ticks(self.low, self.high)
        if self.scale == "symlog":
            top = max(abs(self.low), abs(self.high), 1.0)
            decades = [10.0 ** e for e in range(0, int(math.floor(math.log10(top))) + 1)]
            candidates = [0.0] + decades + [-d for d in decades]
            return sorted(t for t in candidates if self.low <= t <= self.high)
        return _nice_ticks(self.low, self.high)


def _frame(x_axis: _Axis, y_axis: _Axis, x_label: str, y_label: str, right: float = _W - _RIGHT) -> list[str]:
    parts = [f'<rect x="{_LEFT}" y="{_TOP}" width="{right - _LEFT}" height="{_H - _TOP - _BOTTOM}" '
             'fill="#ffffff" stroke="#9aa8b5"/>']
    for tick in x_axis.ticks():
        x = float(x_axis(tick))
        parts.append(f'<line x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}" y2="{_H - _BOTTOM}" stroke="#eef1f4"/>')
        parts.append(f'<text x="{x:.1f}" y="{_H - _BOTTOM + 14}" text-anchor="middle">{esc(_tick_text(tick))}</text>')
    for tick in y_axis.ticks():
        y = float(y_axis(tick))
        parts.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#eef1f4"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(_tick_text(tick))}</text>')
    parts.append(f'<text x="{(_LEFT + right) / 2:.0f}" y="{_H - 8}" text-anchor="middle">{esc(x_label)}</text>')
    parts.append(f'<text x="14" y="{(_TOP + _H - _BOTTOM) / 2:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {(_TOP + _H - _BOTTOM) / 2:.0f})">{esc(y_label)}</text>')
    return parts


def _tick_text(value: float) -> str:
    if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
        return f"{value:.0e}"
    return f"{value:,.6g}"


def _svg(parts: list[str], title: str = "") -> str:
    label = f' aria-label="{esc(title)}"' if title else ""
    return (f'<div class="plot"><svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
            f'viewBox="0 0 {_W} {_H}" font-family="DejaVu Sans, Arial, sans-serif" font-size="11" '
            f'role="img"{label}>' + "".join(parts) + "</svg></div>")


def _histogram_svg(counts, edges, x_label: str, y_label: str, *, marker=None, marker_label: str = "") -> str:
    counts, edges = np.asarray(counts, dtype=np.float64), np.asarray(edges, dtype=np.float64)
    x_axis = _Axis(float(edges[0]), float(edges[-1]), _LEFT, _W - _RIGHT)
    y_axis = _Axis(0.0, float(counts.max()) * 1.05 if counts.size and counts.max() > 0 else 1.0,
                   _H - _BOTTOM, _TOP)
    parts = _frame(x_axis, y_axis, x_label, y_label)
    base = float(y_axis(0.0))
    for count, left, right in zip(counts, edges[:-1], edges[1:]):
        if count <= 0:
            continue
        x0, x1, top = float(x_axis(left)), float(x_axis(right)), float(y_axis(count))
        parts.append(f'<rect x="{x0:.1f}" y="{top:.1f}" width="{max(x1 - x0 - 0.5, 0.5):.1f}" '
                     f'height="{base - top:.1f}" fill="{PALETTE[0]}" fill-opacity="0.8"/>')
    markers = () if marker is None else (marker if isinstance(marker, tuple) else (marker,))
    for value in markers:
        if edges[0] <= value <= edges[-1]:
            x = float(x_axis(value))
            parts.append(f'<line x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}" y2="{_H - _BOTTOM}" stroke="#b3261e" '
                         'stroke-width="2"/>')
    if markers and marker_label:
        parts.append(f'<text x="{_W - _RIGHT - 6}" y="{_TOP + 14}" text-anchor="end" fill="#b3261e">'
                     f"{esc(marker_label)}</text>")
    return _svg(parts, f"histogram of {x_label}")


def _scatter_svg(truth: np.ndarray, noisy: np.ndarray) -> str:
    if truth.size > MAX_SCATTER_POINTS:  # every k-th item in order of true count: deterministic, spans the range
        order = np.argsort(truth, kind="stable")
        keep = order[np.linspace(0, truth.size - 1, MAX_SCATTER_POINTS).astype(np.int64)]
        truth, noisy = truth[keep], noisy[keep]
    low = float(min(truth.min(), noisy.min()))
    high = float(max(truth.max(), noisy.max()))
    # counts are skewed (a few large, many small) and released ones can be negative: symmetric log
    x_axis = _Axis(low, high, _LEFT, _W - _RIGHT, "symlog", pad=0.03)
    y_axis = _Axis(low, high, _H - _BOTTOM, _TOP, "symlog", pad=0.03)
    parts = _frame(x_axis, y_axis, "true count (log scale)", "released count (log scale)")
    parts.append(f'<line x1="{float(x_axis(x_axis.low)):.1f}" y1="{float(y_axis(y_axis.low)):.1f}" '
                 f'x2="{float(x_axis(x_axis.high)):.1f}" y2="{float(y_axis(y_axis.high)):.1f}" stroke="#9aa8b5"/>')
    xs, ys = x_axis(truth), y_axis(noisy)
    parts.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{PALETTE[0]}" fill-opacity="0.5"/>'
                 for x, y in zip(xs, ys))
    return _svg(parts, "true against released counts")


def _line_chart_svg(series: list[dict], *, x_label: str, y_label: str, log_x: bool, log_y: bool,
                    y_range: tuple[float, float] | None = None, markers: bool = True) -> str:
    """Lines with points (and a shaded band when ``low``/``high`` are given); legend on the right."""
    def usable(values, log):
        values = np.asarray(values, dtype=np.float64)
        values = values[np.isfinite(values)]
        return values[values > 0] if log else values

    xs = np.concatenate([usable(s["x"], log_x) for s in series] + [np.empty(0)])
    ys = np.concatenate([usable(s[k], log_y) for s in series for k in ("y", "low", "high") if k in s]
                        + [np.empty(0)])
    x_low, x_high = (float(xs.min()), float(xs.max())) if xs.size else (1.0, 10.0)
    y_low, y_high = y_range or ((float(ys.min()), float(ys.max())) if ys.size else (1.0, 10.0))
    right = _W - _LEGEND
    x_axis = _Axis(x_low, x_high, _LEFT, right, "log" if log_x else "linear", pad=0.03)
    y_axis = _Axis(y_low, y_high, _H - _BOTTOM, _TOP, "log" if log_y else "linear", pad=0.06)
    parts = _frame(x_axis, y_axis, x_label + (" (log scale)" if log_x else ""),
                   y_label + (" (log scale)" if log_y else ""), right=right)
    for number, s in enumerate(series):
        colour = PALETTE[number % len(PALETTE)]
        x = np.asarray(s["x"], dtype=np.float64)
        ok = np.isfinite(x) & ((x > 0) if log_x else True)
        if "low" in s and "high" in s:
            low, high = np.asarray(s["low"], float), np.asarray(s["high"], float)
            band = ok & np.isfinite(low) & np.isfinite(high) & ((low > 0) if log_y else True)
            if band.sum() > 1:
                upper = _points(x_axis, y_axis, x[band], high[band])
                lower = _points(x_axis, y_axis, x[band][::-1], low[band][::-1])
                parts.append(f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.15" stroke="none"/>')
        y = np.asarray(s["y"], dtype=np.float64)
        good = ok & np.isfinite(y) & ((y > 0) if log_y else True)
        if good.any():
            parts.append(f'<polyline points="{_points(x_axis, y_axis, x[good], y[good])}" fill="none" '
                         f'stroke="{colour}" stroke-width="2"/>')
        if good.any() and markers:
            parts.extend(f'<circle cx="{float(x_axis(a)):.1f}" cy="{float(y_axis(b)):.1f}" r="3" fill="{colour}"/>'
                         for a, b in zip(x[good], y[good]))
        top = _TOP + 6 + 18 * number
        parts.append(f'<rect x="{right + 10}" y="{top}" width="14" height="3" fill="{colour}"/>')
        parts.append(f'<text x="{right + 30}" y="{top + 5}">{esc(_shorten(s["label"], 22))}</text>')
    return _svg(parts, f"{y_label} against {x_label}")


def _points(x_axis: _Axis, y_axis: _Axis, x, y) -> str:
    return " ".join(f"{float(x_axis(a)):.1f},{float(y_axis(b)):.1f}" for a, b in zip(x, y))


def _shorten(text: str, length: int) -> str:
    return text if len(text) <= length else text[:length - 1] + "…"
