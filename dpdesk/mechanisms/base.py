"""What a mechanism is: a declared parameter schema, a deterministic ``prepare`` and a
randomized ``run``; and what it produces: a :class:`Release`.

The GUI builds its configuration form from :class:`Param` objects and the CLI parses
``--param k=v`` with :meth:`Param.parse`; adding a mechanism means adding one module that
defines a :class:`Mechanism` subclass decorated with :func:`dpdesk.mechanisms.register`.

``prepare`` does the deterministic work on the data (cached per dataset and the public
inputs it depends on, see :meth:`Mechanism.prepare_key`); ``run`` does the randomized
step and must draw every random bit from the :class:`RandomSource` it is given.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import __version__
from ..errors import ParameterError
from ..privacy.budget import BudgetSplit
from ..privacy.randomness import RandomSource
from ..tasks import CancelToken, ProgressFn

KINDS = ("int", "float", "choice", "bool", "text", "file")


@dataclass(frozen=True)
class Param:
    """One parameter of a mechanism, with everything a form or a parser needs."""

    name: str
    kind: str
    default: Any = None
    label: str = ""
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""
    reference: str = ""
    required: bool = False
    log: bool = False
    advanced: bool = False
    #: changes only what is computed for the plots, never what is published: left out of the public report
    plots_only: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown parameter kind {self.kind}")

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ")

    def parse(self, raw: Any) -> Any:
        """Turn a CLI string or a widget value into a checked value (``ParameterError`` if bad)."""
        if raw is None or (isinstance(raw, str) and raw.strip() == ""):
            if self.required:
                raise ParameterError(f"The parameter '{self.name}' ({self.title}) is required: {self.help}")
            return self.default
        try:
            if self.kind == "int":
                value = float(raw) if isinstance(raw, str) else raw
                if isinstance(value, bool) or not float(value).is_integer():
                    raise ValueError
                value = int(value)
            elif self.kind == "float":
                value = float(raw)
                if not math.isfinite(value):
                    raise ValueError
            elif self.kind == "bool":
                if isinstance(raw, str):
                    lowered = raw.strip().lower()
                    if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                        raise ValueError
                    value = lowered in ("1", "true", "yes", "on")
                else:
                    value = bool(raw)
            elif self.kind == "choice":
                value = str(raw).strip()
                if value not in self.choices:
                    raise ParameterError(f"The parameter '{self.name}' must be one of "
                                         + ", ".join(self.choices) + f", not '{value}'.")
            else:
                value = str(raw)
        except ParameterError:
            raise
        except (TypeError, ValueError):
            what = {"int": "a whole number", "float": "a number", "bool": "yes or no"}.get(self.kind, "text")
            raise ParameterError(f"The parameter '{self.name}' must be {what}, not {raw!r}.") from None
        if self.kind in ("int", "float"):
            if self.minimum is not None and value < self.minimum:
                raise ParameterError(f"The parameter '{self.name}' ({self.title}) must be at least "
                                     f"{_fmt(self.minimum)}, not {_fmt(value)}.")
            if self.maximum is not None and value > self.maximum:
                raise ParameterError(f"The parameter '{self.name}' ({self.title}) must be at most "
                                     f"{_fmt(self.maximum)}, not {_fmt(value)}.")
        return value

    def describe(self) -> dict:
        return {
            "name": self.name, "type": self.kind, "default": self.default, "label": self.title,
            "help": self.help, "minimum": self.minimum, "maximum": self.maximum,
            "choices": list(self.choices), "unit": self.unit, "reference": self.reference,
            "required": self.required, "log_scale": self.log, "advanced": self.advanced,
            "plots_only": self.plots_only,
        }


def _fmt(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


BOUND = Param(
    "bound", "int", None, label="Declared bound Δ",
    help="The most items one person may contribute, declared by you before looking at the data. "
         "People with more items keep a random Δ of them (truncation). Never set it from the data's "
         "observed maximum: that is not private.",
    minimum=1, maximum=10**9, unit="items per person", reference="GS §2.1; docs/ARCHITECTURE.md §3", required=True, log=True)


# What a mechanism does for the steward, in their words: lists group mechanisms by this, not by
# paper, so that someone who has not read the papers can choose. Ordered as lists show them.
EVERY_COUNT, SHARED_NOISE, NO_BOUND, BIG_COUNTS, SPECIAL_QUERIES = (
    "every-count", "shared-noise", "no-bound", "big-counts", "special-queries")
PURPOSES = {
    EVERY_COUNT: ("Noise on every count",
                  "Each count gets its own noise, of a size known in advance from ε and the declared bound. "
                  "Simple, unbiased and easy to explain; with a large bound Δ the noise is large."),
    SHARED_NOISE: ("Share noise across similar counts",
                   "Counts that look alike are grouped (or the list of counts is smoothed) and share the noise: "
                   "much less noise per count, at the price of some bias towards the group's average."),
    NO_BOUND: ("No bound needed",
               "You need not declare how many items one person may hold: the mechanism picks a cut-off "
               "privately, with a share of ε (ALPA publishes one average for all items)."),
    BIG_COUNTS: ("Large sparse tables: publish only the big counts",
                 "For tables with many mostly empty cells: only cells whose noisy count is large (or a weighted "
                 "sample of them) are published, so the noise on the empty cells stays out of the release."),
    SPECIAL_QUERIES: ("Summaries for range questions and compact sketches",
                      "For readers who will ask for sums over ranges of cells, or when the release must be small: "
                      "answers those questions well, single cells less so."),
}
OTHER_PURPOSE = ("Other mechanisms", "")


def purpose_of(mechanism) -> tuple[str, str]:
    """(title, explanation) of the group a mechanism is listed under."""
    return PURPOSES.get(mechanism.purpose, OTHER_PURPOSE)


@dataclass
class Diagnostic:
    """Numbers for one plot. ``internal`` means they were computed from the true data."""

    title: str
    caption: str
    data: dict
    internal: bool
    x: str = ""
    y: str = ""


@dataclass
class CellSummary:
    """A released sparse summary: cell numbers, values and (for samples) estimation weights."""

    indices: np.ndarray
    values: np.ndarray
    weights: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.indices.size)


@dataclass
class Release:
    """The outcome of one mechanism run.

    ``values`` are the noisy counts aligned with the dataset's items (count mechanisms);
    ``cells`` the released summary (sparse-domain mechanisms). ``report`` is the public
    description (no true-data values); ``diagnostics`` feed the plots (each flagged
    internal when it used the true data); ``internal`` holds true-data facts such as how
    many rows were truncated. ``exploration`` is True for seeded runs, which can never be
    exported.
    """

    mechanism: str
    epsilon: float
    budget: BudgetSplit
    params: dict
    values: np.ndarray | None = None
    cells: CellSummary | None = None
    labels: np.ndarray | None = None
    exploration: bool = True
    randomness: str = ""
    dataset_name: str = ""
    dataset_fingerprint: str | None = None
    created: str = ""
    report: dict = field(default_factory=dict)
    diagnostics: dict = field(default_factory=dict)
    internal: dict = field(default_factory=dict)
    #: the data the mechanism ran on (after projection onto the declared domain), kept in
    #: memory for the internal report; never serialised or published
    data: object = field(default=None, repr=False, compare=False)
    #: set by the mechanism: the 95% half-width of the noise on each value it returns (one
    #: number, or one per value or cell), from public inputs only (ε, declared settings, scales
    #: and sizes the release publishes anyway): the noise's part of ``error_margin``
    noise_margin: object = field(default=None, repr=False, compare=False)
    #: set by the mechanism: the 95% half-width of each value's TOTAL error against the item's true
    #: count (noise and the mechanism's bias), from private values and declared facts only
    #: (dpdesk.mechanisms.margins); :mod:`dpdesk.mechanisms.publish` turns it into ``margin95``
    error_margin: object = field(default=None, repr=False, compare=False)
    #: set by the mechanism instead of ``error_margin`` when no private value bounds its bias: why
    #: (a clause the report's first page quotes after "No margin of error is published: ")
    margin_withheld: str = field(default="", repr=False, compare=False)
    #: the published margins of error, one per published value (set by ``publish``)
    margin95: np.ndarray | None = None
    #: after ``publish`` with whole numbers: the mechanism's own (unbiased) values, their cells
    #: and margins, kept so that ``dpdesk export --entry N --raw`` can write them without new noise
    unrounded: dict | None = None

    @property
    def epsilon_spent(self) -> float:
        return self.budget.spent

    @property
    def delta(self) -> float:
        """0 for a pure ε-DP release; otherwise the δ of an (ε, δ) guarantee (stated in the report)."""
        return self.budget.delta

    @property
    def budget_split(self) -> list[dict]:
        return self.budget.as_list()

    def to_record(self) -> dict:
        """The release's public content as plain JSON values (kept in the ledger for re-export).

        Only what a release publishes: no diagnostics, no internal facts, no fingerprint.
        """
        record = {
            "mechanism": self.mechanism, "epsilon": self.epsilon, "params": self.params,
            "budget": [{"name": s.name, "epsilon": s.epsilon, "description": s.description, "delta": s.delta}
                       for s in self.budget.steps],
            "randomness": self.randomness, "dataset_name": self.dataset_name, "created": self.created,
            # what the ledger entry itself adds (its reference, the dataset's total) comes after the record
            "report": {k: v for k, v in self.report.items() if k not in ("ledger", "dataset_budget")},
        }
        if self.values is not None:
            record["values"] = np.asarray(self.values).tolist()
            record["labels"] = [str(x) for x in self.labels]
        if self.cells is not None:
            record["cells"] = _cells_record(self.cells)
        if self.margin95 is not None:
            record["margin95"] = np.asarray(self.margin95).tolist()
        if self.unrounded is not None:
            margins = self.unrounded["margin95"]
            unrounded = {"margin95": None if margins is None else np.asarray(margins).tolist()}
            if self.unrounded.get("values") is not None:
                unrounded["values"] = np.asarray(self.unrounded["values"]).tolist()
            if self.unrounded.get("cells") is not None:
                unrounded["cells"] = _cells_record(self.unrounded["cells"])
            record["unrounded"] = unrounded
        return json.loads(json.dumps(record, default=_plain_json))

    @classmethod
    def from_record(cls, record: dict) -> "Release":
        """A secure release rebuilt from :meth:`to_record` (to export it again, no new noise)."""
        budget = BudgetSplit(float(record["epsilon"]))
        for step in record["budget"]:
            budget.add(step["name"], step["epsilon"], step.get("description", ""), delta=step.get("delta", 0.0))
        release = cls(mechanism=record["mechanism"], epsilon=float(record["epsilon"]), budget=budget,
                      params=dict(record["params"]), exploration=False, randomness=record.get("randomness", ""),
                      dataset_name=record.get("dataset_name", ""), created=record.get("created", ""),
                      report=dict(record.get("report", {})))
        if "values" in record:
            release.values = _numbers(record["values"])
            release.labels = np.array(record["labels"], dtype=object)
        if "cells" in record:
            release.cells = _cells_from_record(record["cells"])
        if "margin95" in record:  # absent in entries recorded before margins were published
            release.margin95 = _numbers(record["margin95"])
        if "unrounded" in record:
            unrounded = record["unrounded"]
            margins = unrounded["margin95"]
            release.unrounded = {"margin95": None if margins is None else _numbers(margins),
                                 "values": _numbers(unrounded["values"]) if "values" in unrounded else None,
                                 "cells": _cells_from_record(unrounded["cells"]) if "cells" in unrounded else None}
        return release


def _numbers(values) -> np.ndarray:
    """A JSON list of numbers as int64 when all are whole (as written), else float64."""
    array = np.asarray(values)
    return array.astype(np.int64) if array.dtype.kind in "iu" else array.astype(np.float64)


def _cells_record(cells: "CellSummary") -> dict:
    return {"indices": cells.indices.tolist(), "values": np.asarray(cells.values).tolist(),
            "weights": None if cells.weights is None else np.asarray(cells.weights).tolist(), "info": cells.info}


def _cells_from_record(cells: dict) -> "CellSummary":
    return CellSummary(np.asarray(cells["indices"], dtype=np.int64), _numbers(cells["values"]),
                       None if cells["weights"] is None else np.asarray(cells["weights"], dtype=float),
                       dict(cells.get("info") or {}))


def _plain_json(value):
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    return str(value)


class Mechanism:
    """Base class: subclasses set the class attributes and implement :meth:`run`."""

    id: str = ""
    name: str = ""
    family: str = ""
    purpose: str = ""  # a key of PURPOSES: what it does for the steward (how lists group it)
    paper: str = ""
    reference: str = ""
    summary: str = ""
    data_kind: str = "incidence"  # or "cells"
    params: tuple[Param, ...] = ()
    releasable: bool = True  # False: a non-private comparison aid that can never be released
    order: int = 100  # position in lists

    # -- schema ------------------------------------------------------------------------
    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def describe(self) -> dict:
        return {
            "id": self.id, "name": self.name, "family": self.family, "purpose": purpose_of(self)[0],
            "paper": self.paper,
            "reference": self.reference, "summary": self.summary, "data": self.data_kind,
            "releasable": self.releasable, "parameters": [p.describe() for p in self.params],
        }

    def validate(self, data, epsilon: float, params: dict) -> dict:
        """All parameters checked and completed with defaults (``ParameterError`` if bad)."""
        known = {p.name for p in self.params}
        unknown = set(params) - known
        if unknown == {"bound"} and getattr(self, "without_bound", None):
            raise ParameterError(f"The mechanism '{self.id}' needs no bound Δ and does not use one: "
                                 f"{self.without_bound}. Leave out --bound (or 'bound').")
        if unknown:
            raise ParameterError(f"The mechanism '{self.id}' has no parameter "
                                 + ", ".join(f"'{u}'" for u in sorted(unknown))
                                 + (". Its parameters are: " + ", ".join(sorted(known)) if known else
                                    "; it takes no parameters") + ".")
        values = {p.name: p.parse(params.get(p.name)) for p in self.params}
        if data is not None and data.kind != self.data_kind:
            kind = "incidence data (people × items)" if self.data_kind == "incidence" else "cell counts (a contingency table)"
            raise ParameterError(f"The mechanism '{self.id}' works on {kind}; this dataset is "
                                 + ("cell counts" if data.kind == "cells" else "incidence data") + ".")
        return self.check(data, epsilon, values)

    def check(self, data, epsilon: float, params: dict) -> dict:
        """Cross-parameter checks; override when needed."""
        return params

    # -- work --------------------------------------------------------------------------
    def prepare_key(self, epsilon: float, params: dict) -> tuple:
        """The inputs :meth:`prepare` depends on (besides the data)."""
        return ()

    def prepare(self, data, epsilon: float, params: dict, progress: ProgressFn, cancel: CancelToken | None):
        return None

    def run(self, data, prepared, epsilon: float, params: dict, source: RandomSource) -> Release:  # pragma: no cover
        raise NotImplementedError

    # -- public descriptions ----------------------------------------------------------
    def public_facts(self, data, params: dict) -> dict:
        """Facts the release treats as public (declared or structural), for the report."""
        facts = {}
        if data is not None and data.kind == "incidence":
            facts["number of items (d)"] = data.n_items
            domain = getattr(data, "domain", None)
            facts["item list"] = domain.statement() if domain is not None else \
                "the labels found in the data (exploration only: a release needs a declared item list)"
        if "bound" in params and params.get("bound") is not None:
            facts["declared bound Δ (items per person)"] = params["bound"]
        return facts

    def expected_error(self, epsilon: float, params: dict, facts: dict) -> dict | None:
        """Error to expect, from public quantities only (``None`` when it depends on the data)."""
        return None

    def new_release(self, data, epsilon: float, params: dict, budget: BudgetSplit, source: RandomSource,
                    **fields) -> Release:
        """A :class:`Release` with the common fields and the public report filled in."""
        release = Release(
            mechanism=self.id, epsilon=float(epsilon), budget=budget.check(), params=dict(params),
            exploration=not source.secure, randomness=source.description,
            dataset_name=getattr(data, "name", ""),
            created=_dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
            **fields)
        if release.labels is None and data is not None and data.kind == "incidence":
            release.labels = data.item_labels
        release.report = self.public_report(data, release)
        domain = getattr(data, "domain", None)
        if domain is not None:
            release.report["domain"] = domain.describe()
        return release

    def public_report(self, data, release: Release) -> dict:
        facts = self.public_facts(data, release.params)
        return {
            "mechanism": {"id": self.id, "name": self.name, "family": self.family, "paper": self.paper,
                          "reference": self.reference, "summary": self.summary},
            "epsilon": release.epsilon,
            "budget": release.budget.as_list(),
            "parameters": {k: v for k, v in release.params.items()},
            "public_facts": facts,
            "randomness": release.randomness,
            "mode": "exploration (seeded, not exportable)" if release.exploration else "release",
            "software": f"dpdesk {__version__}",
            "created": release.created,
            "expected_error": self.expected_error(release.epsilon, release.params, facts),
            "notes": list(self.report_notes(release.params)),
        }

    def report_notes(self, params: dict):
        """Plain-language notes for the public report (post-processing, assumptions)."""
        return ()

    # -- publication (dpdesk.mechanisms.publish) ---------------------------------------
    def whole_values(self, values: np.ndarray) -> np.ndarray:
        """The values as published whole numbers ≥ 0: rounded half up, negatives set to 0.

        Post-processing. Each value is rounded on its own, so values that are equal (a GS
        group's shared average, ALPA's one average) stay equal.
        """
        return np.maximum(np.floor(np.asarray(values, dtype=np.float64) + 0.5), 0.0)

    def whole_cells(self, cells: CellSummary) -> CellSummary:
        """A cell summary as published whole numbers (see the sparse mechanisms)."""
        return cells

    def publication_notes(self, params: dict, whole: bool) -> tuple[str, ...]:
        """Sentences on how the published figures hang together (e.g. a group's shared value)."""
        return ()

    #: whether the mechanism publishes margins of error that cover its total error (dpdesk.mechanisms.margins;
    #: it may still withhold them in a release, saying why). False for mechanisms that never can — and the
    #: default, so that a new mechanism is not recommended to a steward who asks for margins before it states them
    margins_published: bool = False

    def margin_covers(self, params: dict) -> str:
        """What each margin covers, completing "The margin covers …" (the report's first page quotes it)."""
        return "the noise" + cut_words(params, estimated=True)

    def margin_pull(self, params: dict, estimates: dict) -> str:
        """For shared averages: a sentence on how far large counts are pulled towards their group's average
        (from the release's own private estimates), or ""."""
        return ""


def cut_words(params: dict, *, estimated: bool) -> str:
    """", and the counts lost when people with more than Δ = 5 items kept 5 of them …" for the margins' wording."""
    bound = params.get("bound")
    if bound is None:
        return ""
    items = "item" if bound == 1 else "items"
    if params.get("bound_holds"):
        return (f"; nothing for a cut to Δ = {bound:,} {items} per person, as the data steward declared that no one "
                "holds more")
    kept = "one" if bound == 1 else f"a random {bound:,}"
    return (f" and the counts lost when people with more than Δ = {bound:,} {items} kept {kept} of them"
            + (" (estimated privately)" if estimated else ""))


def counts_error(scale: float, count: int, *, clamped: bool = False, discrete: bool = True) -> dict:
    """Expected error of counts with additive (discrete) Laplace noise of the given scale."""
    from ..privacy.noise import discrete_laplace_mean_abs, discrete_laplace_quantile, laplace_quantile

    if discrete:
        z95 = discrete_laplace_quantile(scale, 0.95)
        mean_abs = discrete_laplace_mean_abs(scale)
    else:
        z95 = laplace_quantile(scale, 0.95)
        mean_abs = scale
    # the errors of whole counts published as whole numbers are whole: rounded up (never down, as the margin95
    # column is), so that the text and the "Error to expect" table quote the same figure
    z95 = float(math.ceil(z95 * (1 - 1e-12)))
    text = f"95% of counts lie within ±{z95:,.0f} of the count without noise (noise scale {scale:,.3g}); " \
           f"the average error from the noise is about {mean_abs:,.2f}."
    if clamped:
        text += " Negative noisy counts are set to 0, which only moves them closer to the truth."
    return {"noise_scale": scale, "within_95": z95, "mean_abs_error": mean_abs, "counts": count, "text": text}


Runner = Callable[..., Release]
