"""What a release publishes: whole numbers ≥ 0 by default, and a margin of error for every value.

:func:`publish` is the one step between a mechanism's output and the published figures.
The workflow applies it to every secure release before the ledger records it (so the
ledger keeps exactly what was published, and ``dpdesk export --entry N`` writes the same
bytes again), and the comparison runner applies it to every seeded run (so comparisons
measure the error of what would be published: whole numbers, unless the steward asks for
raw values).

Whole numbers (the default). Every value is rounded half up and negatives become 0
(:meth:`Mechanism.whole_values`): post-processing, no privacy cost. Values that are
equal stay equal — a GS group's items share one average, so the group's value is in
effect rounded once, and ALPA's single average stays single. Cell summaries
(:meth:`Mechanism.whole_cells`) list noisy counts, which are whole already. Summaries
without weights leave out a listed value of 0 or below (an absent cell reads as 0).
Weighted samples keep every sampled cell: its value is set to 0 when below 0, and its
weight, an unbiased estimate, keeps its sign and is only rounded — dropping the negative
weights would make sums of weights many times too large. A count sketch publishes its
buckets as they are: they are signed sums (cells enter with random signs), so negative
buckets are kept, and its form says so ("whole numbers that may be below 0").
What a summary lists depends on the form, so the mechanism's summary sentence and the
number of cells listed in the report are rewritten for the form published
(``form_report``).

Raw values (``raw=True``, ``--raw``): the mechanism's values as they are — unbiased,
fractional or negative — for analysts who aggregate them. After a whole-number
publication the raw values are kept too (``release.unrounded``, recorded in the ledger),
so they can be written later without new noise.

Margins (``margin95``). Each value's margin covers its TOTAL error against the item's true
count — the noise and the mechanism's own bias (the cut to Δ items per person, a group's
shared average) — at least 95% of the time. The mechanism states it before publication
(``release.error_margin``, against the true count, for its raw values), computed from
values the release already paid for and declared facts only (:mod:`.margins` has the
derivations, each mechanism its part); a mechanism whose bias no private value bounds
(ALPA's one average, FPA's dropped coefficients, GS-R's random groups, DPSense's
normalisation on sparse data, summaries that select cells by their noisy values) states why instead (``release.margin_withheld``) and
publishes no margin: the ``margin95`` column is there, empty, and the report's first page
gives the reason. For raw values the margin is ``error_margin`` rounded up to three
significant digits. For whole numbers: the true count c is a whole number, so when
|x − c| ≤ m, |round(x) − c| ≤ m + 0.5 and, being a whole number, ≤ ⌊m + 0.5⌋; when the raw
values are whole numbers already (discrete noise on counts) the error is a whole number
and the margin ⌊m⌋. Setting negatives to 0 never breaks this: c ≥ 0, so 0 is closer to it.
"""

from __future__ import annotations

import math

import numpy as np

from ..privacy.noise import discrete_laplace_quantile
from .base import CellSummary, Release

FORMS = ("whole", "raw")
MARGIN_DIGITS = 3  # significant digits of a margin that is not a whole number (rounded up)
WHOLE_FORM = "whole numbers ≥ 0"
SIGNED_WHOLE_FORM = "whole numbers that may be below 0"  # the count sketch's signed buckets
RAW_FORM = "raw values"
COLUMN_MEANING = ("The margin of error of the value in the same row: the item's true count lies within ±margin95 "
                  "of the published value at least 95% of the time.")
WITHHELD_MEANING = "Empty: this release publishes no margin of error (the report's first page says why)."
NOISE_ONLY = ("the mechanism states only the margin of its noise, not of what it moves itself, and a margin of the noise "
              "alone would not cover the whole error")


def discrete_laplace_margin(scale, divisor=1.0) -> np.ndarray:
    """The 95% half-width of discrete Laplace noise of ``scale`` divided by ``divisor`` (both may be arrays)."""
    scale = np.asarray(scale, dtype=np.float64)
    unique, inverse = np.unique(scale, return_inverse=True)
    quantiles = np.array([_quantile(s) for s in unique], dtype=np.float64)
    return quantiles[inverse].reshape(scale.shape) / np.asarray(divisor, dtype=np.float64)


def _quantile(scale: float) -> float:
    if math.exp(-1.0 / scale) == 0.0:  # so little noise that it is 0 with probability 1 − 10⁻³²⁰
        return 0.0
    return discrete_laplace_quantile(scale, 0.95)


def round_up(margin) -> np.ndarray:
    """Margins rounded up to ``MARGIN_DIGITS`` significant digits (never down: coverage is kept)."""
    margin = np.asarray(margin, dtype=np.float64)
    out = np.zeros_like(margin)
    positive = margin > 0
    digits = np.floor(np.log10(margin[positive]))
    factor = 10.0 ** (MARGIN_DIGITS - 1 - digits)
    out[positive] = np.ceil(margin[positive] * factor * (1 - 1e-12)) / factor
    return out


def published_margin(error_margin, *, whole: bool, whole_values: bool = False) -> np.ndarray:
    """The ``margin95`` column from each value's total error margin against its true count (module notes).

    ``whole_values``: the raw values are whole numbers already, so every error is a whole number.
    """
    margin = np.asarray(error_margin, dtype=np.float64)
    if whole:
        slack = 0.0 if whole_values else 0.5
        return np.floor(margin + slack + 1e-9).astype(np.int64)
    margin = round_up(margin)
    return margin.astype(np.int64) if np.all(margin == np.round(margin)) else margin


def _whole_numbers(values) -> bool:
    values = np.asarray(values, dtype=np.float64)
    return bool(np.all(values == np.round(values)))


def publish(release: Release, *, raw: bool = False, mechanism=None) -> Release:
    """Make ``release`` what is published (in place, and returned): whole numbers by default.

    ``release.values`` (or ``release.cells``) become the published figures, ``margin95``
    their margins (None when the mechanism withholds them), and ``release.report['publication']``
    says what was published and what the margins mean. Publishing twice is refused: the second
    would round rounded values.
    """
    from . import get

    if release.margin95 is not None or "publication" in release.report:
        raise ValueError("this release was already published")
    mechanism = mechanism or get(release.mechanism)
    if release.error_margin is None and not release.margin_withheld:
        if release.noise_margin is None:
            raise ValueError(f"the mechanism '{mechanism.id}' neither stated its margins nor why it withholds them")
        release.margin_withheld = NOISE_ONLY  # a margin of the noise alone would be false wherever it has a bias
    whole = not raw
    withheld = release.error_margin is None
    if release.values is not None:
        shape = np.shape(release.values)
        exact = _whole_numbers(release.values)
        total = None if withheld else np.broadcast_to(np.asarray(release.error_margin, dtype=np.float64), shape)
        raw_margin = None if withheld else published_margin(total, whole=False)
        if raw:
            release.margin95 = raw_margin
        else:
            release.unrounded = {"values": release.values, "cells": None, "margin95": raw_margin}
            release.values = mechanism.whole_values(release.values)
            release.margin95 = None if withheld else published_margin(total, whole=True, whole_values=exact)
    else:
        cells = release.cells
        exact = _whole_numbers(cells.values)
        total = None if withheld else np.broadcast_to(np.asarray(release.error_margin, dtype=np.float64),
                                                       cells.indices.shape)
        raw_margin = None if withheld else published_margin(total, whole=False)
        if raw:
            release.margin95 = raw_margin
        else:
            release.unrounded = {"values": None, "cells": cells, "margin95": raw_margin}
            published = mechanism.whole_cells(cells)
            kept = np.isin(cells.indices, published.indices)  # the rows the whole form keeps, in order
            release.cells = published
            release.margin95 = None if withheld else published_margin(total[kept], whole=True, whole_values=exact)
        _describe_form(mechanism, release, whole)
    release.report["publication"] = publication_report(mechanism, release.params, whole=whole,
                                                       withheld=release.margin_withheld if withheld else "",
                                                       estimates=release.report.get("margin_estimates"))
    return release


def _describe_form(mechanism, release: Release, whole: bool) -> None:
    """Rewrite the report's form-dependent parts (what a summary lists, how many) for the form published."""
    form_report = getattr(mechanism, "form_report", None)
    if form_report is not None and release.cells is not None:
        form_report(release.report, release.cells, release.params, whole)


def publication_report(mechanism, params: dict, *, whole: bool, withheld: str = "", estimates: dict | None = None) -> dict:
    """The public description of what was published and what the margins mean (or why there are none)."""
    if whole:
        form = ("Published as whole numbers of at least 0: every value the mechanism produced was rounded to the "
                "nearest whole number and negative ones were set to 0, which is post-processing and costs no "
                "privacy.")
        if mechanism.id == "sketch":
            form = ("Published as whole numbers: the sketch's bucket values are whole numbers already and are "
                    "published as they are, negative ones included (a count sketch adds each cell with a random "
                    "sign, so setting negative buckets to 0 would bias every estimate).")
        elif _publishes_weights(mechanism, params):
            form += (" The weights are estimates, not values: each is rounded to a whole number but keeps its sign, "
                     "so a weight may be below 0 (see below).")
    else:
        form = ("Published as the mechanism's raw values, as the data steward asked: they may be fractional or "
                "below 0; they suit analysts who add many of them up.")
    out = {
        "form": publication_form(mechanism, whole),
        "statement": form,
        "notes": list(mechanism.publication_notes(params, whole)),
    }
    if withheld:
        out["margin95"] = WITHHELD_MEANING
        out["margin_withheld"] = withheld
        out["margin_covers"] = f"No margin of error is published: {withheld}."
        return out
    covers = mechanism.margin_covers(params)
    rounding = " It includes the rounding to a whole number." if whole else ""
    out["margin95"] = f"{COLUMN_MEANING} It covers {covers}.{rounding}"
    out["margin_covers"] = f"The margin covers {covers}."
    pull = mechanism.margin_pull(params, estimates) if estimates else ""
    if pull:
        out["margin_pull"] = pull
    if estimates:
        out["margin_estimates"] = estimates_text(estimates)
    return out


def estimates_text(estimates: dict) -> str:
    """One sentence on the estimates behind the margins (their noisy figures are in the release's metadata)."""
    parts = []
    truncation = estimates.get("truncation")
    if truncation is not None:
        what = "Δ" if "θ" not in str(truncation.get("what", "Δ")) else "θ*"
        parts.append(f"the items cut off by the bound {what} (about {truncation.get('lost_share', 0.0):.0%} of what "
                     "people hold, by this estimate)")
    if estimates.get("smoothing") is not None:
        parts.append("the items' distance from their group's average")
    return ("The margins rest on this release's own estimates of " + " and of ".join(parts) + ", each made with its "
            "own share of ε (listed in the budget table).") if parts else ""


def publication_form(mechanism, whole: bool) -> str:
    """The short name of the published form (the report's key facts and the CLI's summary line)."""
    if not whole:
        return RAW_FORM
    return SIGNED_WHOLE_FORM if mechanism.id == "sketch" else WHOLE_FORM


def _publishes_weights(mechanism, params: dict) -> bool:
    check = getattr(mechanism, "publishes_weights", None)
    return bool(check(params)) if check is not None else False


def unrounded_release(release: Release) -> Release:
    """The raw values of a release published as whole numbers (a copy; the same noise)."""
    import copy

    if release.unrounded is None:
        return release
    raw = copy.copy(release)
    raw.report = dict(release.report)
    raw.values, raw.cells = release.unrounded["values"], release.unrounded["cells"]
    raw.margin95 = release.unrounded["margin95"]
    raw.unrounded = None
    mechanism_id = release.report.get("mechanism", {}).get("id", release.mechanism)
    from . import get

    mechanism = get(mechanism_id)
    _describe_form(mechanism, raw, whole=False)
    first = release.report.get("publication") or {}
    raw.report["publication"] = publication_report(mechanism, release.params, whole=False,
                                                   withheld=first.get("margin_withheld", ""),
                                                   estimates=release.report.get("margin_estimates"))
    raw.report["publication"]["statement"] += (" These are the raw values of a release first published as whole "
                                               "numbers: the same noise, written again without rounding.")
    raw.report["publication"]["first_published_as"] = release.report.get("publication", {}).get("form", "")
    return raw


__all__ = ["FORMS", "COLUMN_MEANING", "RAW_FORM", "SIGNED_WHOLE_FORM", "WHOLE_FORM", "WITHHELD_MEANING",
           "CellSummary", "discrete_laplace_margin", "publication_form", "publication_report", "publish",
           "published_margin", "round_up", "unrounded_release"]
