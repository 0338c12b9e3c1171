"""The margins a release will publish, previewed before anything is spent (issue 28).

A margin of error covers the noise — whose size follows from ε and the declared settings
alone — and the mechanism's own bias (the cut to Δ items per person, a group's shared
average), which depends on the data and which a release estimates privately. Before the
release, the bias part can only be shown on a stand-in: :func:`margin_preview` runs the
very mechanism (seeded exploration, the same ``run`` and ``publish`` as a release) on
synthetic data shaped by the declared facts only — d items (or m cells), a typical number
of items per person, a number of people — and reports the margins it published there, as
DP Wizard previews its confidence interval on simulated data. Nothing here reads the data,
so the preview costs no budget; it says it is a preview, what the stand-in was, and that
the real margins depend on the data.

The CLI prints it with ``dpdesk release … --dry-run`` and in ``dpdesk recommend … --json``;
the GUI's Configure and Release pages call :func:`margin_preview` (no Qt here).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError
from ..privacy.budget import check_epsilon

DEFAULT_PEOPLE = 10_000  # stand-in size when the steward declares none
MOST_PEOPLE = 200_000  # a preview stays quick: larger declared populations are scaled down (margins scale with it)
SEED = 28
LARGEST = 10  # the preview's "largest values": the stand-in's 10 largest published values
NOTE = ("A preview, not the release: the noise part of each margin follows from ε and the settings alone, but the "
        "part for what the mechanism itself moves depends on the data, so here it comes from a synthetic stand-in "
        "shaped by the declared facts only (nothing was read from the data and nothing was spent). The real margins "
        "will differ.")


@dataclass
class MarginPreview:
    """What :func:`margin_preview` found on the stand-in (all of it from declared facts)."""

    mechanism: str
    epsilon: float
    params: dict
    stand_in: dict
    withheld: str = ""  # why the release would publish no margin on the stand-in, or ""
    margins: dict = field(default_factory=dict)  # smallest, median, largest, largest_values (the 10 largest values')
    noise: dict = field(default_factory=dict)  # the noise part alone: smallest, median, largest
    note: str = NOTE

    @property
    def text(self) -> str:
        """One paragraph for the steward (the CLI prints it; the GUI shows it)."""
        stand = self.stand_in
        what = (f"a stand-in of {stand['people']:,} people with about {stand['typical_row_length']:g} of "
                f"{stand['items']:,} items each" if stand.get("kind") == "incidence" else
                f"a stand-in table of {stand.get('cells', 0):,} cells with {stand.get('nonzero', 0):,} non-empty ones")
        if self.withheld:
            return (f"Preview on {what}: {self.mechanism} would publish no margin of error, because "
                    f"{self.withheld}. {self.note}")
        m, n = self.margins, self.noise
        return (f"Preview on {what}: each value's margin of error (95%) would run from ±{_num(m['smallest'])} to "
                f"±{_num(m['largest'])} (median ±{_num(m['median'])}; ±{_num(m['largest_values'])} for the "
                f"{LARGEST} largest values), of which the noise alone is ±{_num(n['median'])} (median). {self.note}")

    def to_json(self) -> dict:
        return {"preview": True, "mechanism": self.mechanism, "epsilon": self.epsilon, "params": self.params,
                "stand_in": self.stand_in, "withheld": self.withheld or None, "margin95": self.margins,
                "noise_part": self.noise, "note": self.note, "text": self.text}


def _num(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:,.2g}"


def _summary(values: np.ndarray, order_by: np.ndarray | None = None) -> dict:
    values = np.asarray(values, dtype=np.float64)
    out = {"smallest": float(values.min()), "median": float(np.median(values)), "largest": float(values.max())}
    if order_by is not None:
        top = np.argsort(-np.asarray(order_by, dtype=np.float64), kind="stable")[:LARGEST]
        out["largest_values"] = float(np.median(values[top]))
    return out


def stand_in_for(kind: str, domain_size: int, params: dict, *, typical_row_length: float | None = None,
                 people: int | None = None):
    """The synthetic stand-in and its description, from declared facts only (``evaluation.standin``).

    Rows are not capped at the declared Δ, so that the cut to Δ shows in the preview as it would in a release.
    """
    from .standin import DeclaredFacts, synthetic_cells, synthetic_incidence

    people = int(min(people or DEFAULT_PEOPLE, MOST_PEOPLE))
    if kind == "cells":
        nonzero = int(min(domain_size, max(1, people // 4), 50_000))
        data = synthetic_cells(int(domain_size), nonzero, max(people, nonzero), seed=SEED)
        return data, {"kind": "cells", "cells": int(domain_size), "nonzero": nonzero, "people": max(people, nonzero)}
    bound = params.get("bound")
    length = typical_row_length or (max(1.0, bound / 2) if bound else min(10.0, max(1.0, domain_size / 2)))
    length = float(min(length, domain_size))
    facts = DeclaredFacts(rows=people, items=int(domain_size), mean_items_per_person=length, skew=1.0)
    data = synthetic_incidence(facts, seed=SEED)
    return data, {"kind": "incidence", "people": people, "items": int(domain_size), "typical_row_length": length,
                  "item popularity": "Zipf, exponent 1", "declared": typical_row_length is not None}


def margin_preview(kind: str, mechanism_id: str, epsilon, params: dict, domain_size: int, *,
                   typical_row_length: float | None = None, people: int | None = None) -> MarginPreview:
    """The margins ``mechanism_id`` would publish, previewed on a stand-in (module notes).

    ``params`` as the release would take them (checked here); ``domain_size`` is d items or m cells as declared;
    ``typical_row_length`` and ``people`` shape the stand-in (defaults when not declared, and the preview says so).
    """
    from ..mechanisms import running
    from ..mechanisms.publish import publish
    from ..privacy.randomness import SeededRandom

    eps = check_epsilon(epsilon)
    if not isinstance(domain_size, (int, np.integer)) or domain_size < 1:
        raise ParameterError(f"The number of {'cells' if kind == 'cells' else 'items'} must be a whole number of at "
                             f"least 1, not {domain_size!r}.")
    data, described = stand_in_for(kind, int(domain_size), params, typical_row_length=typical_row_length,
                                   people=people)
    mechanism, eps, values = running.validate(data, mechanism_id, eps, params)
    prepared = mechanism.prepare(data, eps, values, lambda *_: None, None)
    source = SeededRandom(np.random.default_rng(SEED), seed=SEED)
    release = publish(mechanism.run(data, prepared, eps, values, source), mechanism=mechanism)
    preview = MarginPreview(mechanism_id, eps, dict(params), described)
    publication = release.report.get("publication") or {}
    if release.margin95 is None:
        preview.withheld = publication.get("margin_withheld") or "it states no margin"
        return preview
    shown = release.values if release.values is not None else release.cells.values
    preview.margins = _summary(release.margin95, shown)
    noise = np.broadcast_to(np.asarray(release.noise_margin, dtype=np.float64), np.shape(release.unrounded["values"]
                                                                                         if release.values is not None
                                                                                         else release.unrounded["cells"].values))
    preview.noise = _summary(noise)
    return preview


__all__ = ["MarginPreview", "NOTE", "margin_preview", "stand_in_for"]
