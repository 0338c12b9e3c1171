"""The internal report: everything about a release that used the true data. NOT for publication.

Every part of it is labelled: a banner at the top and the bottom, a label on every
section heading, the page title, and (when printed from a browser) a fixed header and
footer on every printed page. It holds the true-data summary, the distribution of items
per person against the declared bound, how many people were truncated, the realised
error of this release against the truth (next to the error the public report promised),
the mechanism's diagnostics, and the results of a comparison run if one is given.

Plots are drawn with matplotlib (:mod:`dpdesk.report.charts`) and inlined as SVG, each
with a title and, where it helps, its numbers as a table; the HTML file is self-contained
(no network) and :mod:`dpdesk.report.pdf` turns it into a PDF with the same vector plots.
"""

from __future__ import annotations

import math

import numpy as np

from . import charts
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
# a comparison also scores the raw values (evaluation.compare.RAW_PREFIX)
_METRIC_LABELS.update({f"raw_{k}": f"{v}, raw values" for k, v in list(_METRIC_LABELS.items())})
_METRIC_SHORT.update({f"raw_{k}": f"{v} (raw)" for k, v in list(_METRIC_SHORT.items())})
MAX_SCATTER_POINTS = 4000
MAX_LINE_POINTS = 2000
MAX_MARKED_POINTS = 200
MAX_TABLE_POINTS = 40
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
        parts.append(charts.histogram(counts, edges, "items per person", "people", markers=(bound,) if bound else (),
                                      marker_label=f"declared Δ = {bound}" if bound else "",
                                      title="How many items each person has"))
        parts.append(_histogram_numbers(counts, edges, "items per person", "people"))
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
        parts.append(_scatter(truth, noisy))
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
            + charts.histogram(*_error_histogram(errors), "released − true count", "items",
                               markers=(-within, within), marker_label=f"±{within:,.4g}",
                               title="Errors of this release, with the promised 95% range")
            + _histogram_numbers(*_error_histogram(errors), "released − true count", "items"))


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
            parts.append(charts.lines([{"label": label, "x": xs, "y": ys}], x_label=x_name or x_key,
                                      y_label=y_name if number == 0 and y_name else label, log_x=wide,
                                      log_y=False, markers=xs.size <= MAX_MARKED_POINTS))
            parts.append(_series_numbers(x_name or x_key, label, xs, ys))
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
    # with the reference lines (publishing zeros, one average for all) where the comparison has them
    summary = comparison.summary_with_references() if hasattr(comparison, "summary_with_references") \
        else comparison.summary
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
        parts.append(charts.lines(series, x_label="ε", y_label=_METRIC_SHORT.get(metric, str(metric)),
                                  log_x=True, log_y=positive and not metric.endswith("topk_accuracy"),
                                  y_range=(0.0, 1.0) if metric.endswith("topk_accuracy") else None,
                                  title=f"{title} against ε"))
        table_rows = [(esc(r.label), esc(fmt(r.epsilon)), esc(fmt(r.mean)), esc(f"{fmt(r.ci_low)} … {fmt(r.ci_high)}"),
                       esc(fmt(int(r.repeats)))) for r in rows.itertuples()]
        parts.append(table(table_rows, ["Mechanism", "ε", "Mean", "95% interval", "Repeats"], numeric=(1, 2, 4)))
    return "\n".join(parts)


def _scatter(truth: np.ndarray, noisy: np.ndarray) -> str:
    if truth.size > MAX_SCATTER_POINTS:  # every k-th item in order of true count: deterministic, spans the range
        order = np.argsort(truth, kind="stable")
        keep = order[np.linspace(0, truth.size - 1, MAX_SCATTER_POINTS).astype(np.int64)]
        truth, noisy = truth[keep], noisy[keep]
    return charts.scatter(truth, noisy, "true count", "released count", title="True against released counts")


def _histogram_numbers(counts, edges, x_label: str, y_label: str) -> str:
    """The bars of a histogram as a table (empty bins left out)."""
    rows = []
    for count, left, right in zip(counts, edges[:-1], edges[1:]):
        if count > 0:
            span = fmt(left) if float(right) - float(left) == 1 and float(left) == int(left) else f"{fmt(left)} to {fmt(right)}"
            rows.append((esc(span), esc(fmt(int(count)))))
    return charts.numbers_table([x_label, y_label], rows)


def _series_numbers(x_label: str, y_label: str, x: np.ndarray, y: np.ndarray) -> str:
    """A line's points as a table: every point, or an evenly spread sample of MAX_TABLE_POINTS."""
    picked = np.arange(x.size) if x.size <= MAX_TABLE_POINTS else np.unique(
        np.linspace(0, x.size - 1, MAX_TABLE_POINTS).astype(np.int64))
    rows = [(esc(fmt(x[i])), esc(fmt(y[i]))) for i in picked]
    summary = ("The numbers behind the chart" if x.size <= MAX_TABLE_POINTS
               else f"The numbers behind the chart ({len(rows)} of its {x.size:,} points, evenly spread)")
    return charts.numbers_table([x_label, y_label], rows, summary)
