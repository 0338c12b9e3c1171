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
(``form_report``), and selected cells get their own margin meaning (``margin_meaning``).

Raw values (``raw=True``, ``--raw``): the mechanism's values as they are — unbiased,
fractional or negative — for analysts who aggregate them. After a whole-number
publication the raw values are kept too (``release.unrounded``, recorded in the ledger),
so they can be written later without new noise.

Margins (``margin95``). The mechanism states the 95% half-width of the noise on each of its
values (``release.noise_margin``), from public inputs only: ε, declared settings, and
scales or sizes the release publishes anyway (GS's group sizes, DPSense's θ*). For raw
values that is the margin, rounded up to three significant digits. For whole numbers: when
the value without noise is itself a whole number (a count; ``estimates_whole_numbers``) and
the noise is too, rounding changes nothing and the margin is the same whole number (for
noise on a finer grid it is rounded up: |round(x)| ≤ ⌈|x|⌉); when it is an average or a
normalised count, rounding can add up to 0.5, so the margin is the noise's plus 0.5. In
every case the published value lies within ±margin95 of the value the mechanism would
have published without noise at least 95% of the time — except for summaries that select
cells by their noisy values (filters, samples): there the margin bounds each cell's noise
before the selection, and listed cells with small true counts exceed it more often. Setting negatives to 0 never
breaks this: what is estimated is never negative, so 0 is closer to it. The margin covers
the noise only; :meth:`Mechanism.margin_notes` says what else moves a value (truncation
by Δ, smoothing, dropped coefficients, normalisation), and the report repeats it.
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
COLUMN_MEANING = ("The margin of error of the value in the same row, from public settings only: the published "
                  "value is within ±margin95 of the value the mechanism would have published without noise at "
                  "least 95% of the time.")


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


def published_margin(noise_margin, *, whole: bool, whole_truth: bool) -> np.ndarray:
    """The ``margin95`` column from the noise's 95% half-widths (module notes)."""
    noise_margin = np.asarray(noise_margin, dtype=np.float64)
    if whole and whole_truth:
        return np.ceil(noise_margin * (1 - 1e-12)).astype(np.int64)  # the errors are whole numbers
    if whole:
        noise_margin = noise_margin + 0.5
    margin = round_up(noise_margin)
    return margin.astype(np.int64) if np.all(margin == np.round(margin)) else margin


def publish(release: Release, *, raw: bool = False, mechanism=None) -> Release:
    """Make ``release`` what is published (in place, and returned): whole numbers by default.

    ``release.values`` (or ``release.cells``) become the published figures, ``margin95``
    their margins, and ``release.report['publication']`` says what was published and what
    the margins mean. Publishing twice is refused: the second would round rounded values.
    """
    from . import get

    if release.margin95 is not None or "publication" in release.report:
        raise ValueError("this release was already published")
    mechanism = mechanism or get(release.mechanism)
    if release.noise_margin is None:
        raise ValueError(f"the mechanism '{mechanism.id}' did not state the margin of its noise")
    whole = not raw
    exact = mechanism.estimates_whole_numbers
    if release.values is not None:
        noise = np.broadcast_to(np.asarray(release.noise_margin, dtype=np.float64), np.shape(release.values))
        raw_margin = published_margin(noise, whole=False, whole_truth=exact)
        if raw:
            release.margin95 = raw_margin
        else:
            release.unrounded = {"values": release.values, "cells": None, "margin95": raw_margin}
            release.values = mechanism.whole_values(release.values)
            release.margin95 = published_margin(noise, whole=True, whole_truth=exact)
    else:
        cells = release.cells
        noise = np.broadcast_to(np.asarray(release.noise_margin, dtype=np.float64), cells.indices.shape)
        raw_margin = published_margin(noise, whole=False, whole_truth=exact)
        if raw:
            release.margin95 = raw_margin
        else:
            release.unrounded = {"values": None, "cells": cells, "margin95": raw_margin}
            published = mechanism.whole_cells(cells)
            kept = np.isin(cells.indices, published.indices)  # the rows the whole form keeps, in order
            release.cells = published
            release.margin95 = published_margin(noise[kept], whole=True, whole_truth=exact)
        _describe_form(mechanism, release, whole)
    release.report["publication"] = publication_report(mechanism, release.params, whole=whole)
    return release


def _describe_form(mechanism, release: Release, whole: bool) -> None:
    """Rewrite the report's form-dependent parts (what a summary lists, how many) for the form published."""
    form_report = getattr(mechanism, "form_report", None)
    if form_report is not None and release.cells is not None:
        form_report(release.report, release.cells, release.params, whole)


def publication_report(mechanism, params: dict, *, whole: bool) -> dict:
    """The public description of what was published and what the margins mean."""
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
        form = ("Published as the mechanism's raw values, as the data steward asked: unbiased, but they may be "
                "fractional or below 0; they suit analysts who add many of them up.")
    rounding = ""
    if whole and not mechanism.estimates_whole_numbers:
        rounding = " It includes 0.5 for the rounding to a whole number."
    elif whole and mechanism.estimates_whole_numbers:
        rounding = " The counts estimated are whole numbers, so rounding adds nothing to it."
    margin_meaning = getattr(mechanism, "margin_meaning", None)
    meaning = (margin_meaning(params) if margin_meaning is not None else None) or COLUMN_MEANING
    return {
        "form": publication_form(mechanism, whole),
        "statement": form,
        "notes": list(mechanism.publication_notes(params, whole)),
        "margin95": meaning + rounding,
        "margin_covers": " ".join(("The margin covers the noise only.", *mechanism.margin_notes(params))),
    }


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
    raw.report["publication"] = publication_report(mechanism, release.params, whole=False)
    raw.report["publication"]["statement"] += (" These are the raw values of a release first published as whole "
                                               "numbers: the same noise, written again without rounding.")
    raw.report["publication"]["first_published_as"] = release.report.get("publication", {}).get("form", "")
    return raw


__all__ = ["FORMS", "COLUMN_MEANING", "RAW_FORM", "SIGNED_WHOLE_FORM", "WHOLE_FORM", "CellSummary",
           "discrete_laplace_margin", "publication_form", "publication_report", "publish", "published_margin",
           "round_up", "unrounded_release"]
