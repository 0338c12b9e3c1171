"""The public list of items (or cells) a release is about: what it holds and how it was declared.

Below :mod:`dpdesk.data.dataset`, which attaches a declared domain to a table of counts, and
:mod:`dpdesk.data.domain`, which reads declarations and projects data onto them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

HOW_LIST, HOW_RANGE, HOW_PUBLIC_DATA, HOW_DISCOVERED = "list", "range", "public-data", "discovered"
PUBLIC_DATA_STATEMENT = ("The steward stated that the item names in the data file are public, so the list of "
                         "items was taken from the file.")
#: the origin of a public-data item list read from records: its items are the columns' values
RECORDS_ORIGIN = "the values in the data file's columns"
PUBLIC_RECORDS_STATEMENT = ("The steward stated that the values in the data file's columns are public, so the list "
                            "of items (each a column and one of its values, as column=value) was taken from the file.")
PUBLIC_DOMAINS_STATEMENT = ("The steward stated that the attribute values found in the data file are public, "
                            "so the attribute domains were taken from the file.")

@dataclass(frozen=True)
class ItemDomain:
    """The public list of items a count release is about, and how it was declared."""

    labels: np.ndarray  # object array of str, in the published order
    how: str
    origin: str = ""  # e.g. the label file's name, "range:5000", "the data file"
    epsilon: float = 0.0  # ε spent choosing it (discovered only)
    delta: float = 0.0
    internal: dict = field(default_factory=dict, compare=False)  # true-data facts (never published)
    route: str = ""  # discovered only: "one-pass" (the published noisy counts chose it) or "two-step"
    threshold: int = 0  # discovered only: τ, a function of ε, δ and the discovery bound
    discovery_bound: int = 0  # discovered only: most items one person contributed to the discovery

    @property
    def size(self) -> int:
        return int(self.labels.size)

    def statement(self) -> str:
        """One sentence for the public report: where the published item list came from."""
        d = f"{self.size:,}"
        if self.how == HOW_LIST:
            listed = "The 1 item was" if self.size == 1 else f"The {d} items were"
            return f"{listed} declared by the steward in a list ({self.origin}) before the data was read."
        if self.how == HOW_RANGE:
            return f"The items are the ids 0 to {self.size - 1:,}, declared by the steward before the data was read."
        if self.how == HOW_PUBLIC_DATA:
            statement = PUBLIC_RECORDS_STATEMENT if self.origin == RECORDS_ORIGIN else PUBLIC_DATA_STATEMENT
            return statement + (" It has 1 item." if self.size == 1 else f" It has {d} items.")
        found = "The 1 item was" if self.size == 1 else f"The {d} items were"
        per_person = "1 item" if self.discovery_bound == 1 else f"{self.discovery_bound} items"
        if self.route == "one-pass":
            return (f"{found} discovered privately in one pass: every item's count (at most {per_person} per "
                    f"person) got noise, and only items whose noisy count reached the threshold {self.threshold:,} "
                    f"are listed, with that noisy count. The threshold was fixed by ε, δ and the bound before the "
                    f"data was read; the list and the counts together spent ε = {self.epsilon:.4g} and "
                    f"δ = {self.delta:.3g}.")
        threshold = (f" (threshold {self.threshold:,}, at most {per_person} per person)" if self.threshold else "")
        return (f"{found} discovered privately: only items whose noisy count passed a threshold are "
                f"listed{threshold}, which spent ε = {self.epsilon:.4g} and δ = {self.delta:.3g} of this release's "
                "budget.")

    def describe(self) -> dict:
        """The public description (report and release metadata)."""
        out = {"how": self.how, "items": self.size, "statement": self.statement()}
        if self.origin:
            out["declared_in"] = self.origin
        if self.how == HOW_DISCOVERED:
            out.update(epsilon=self.epsilon, delta=self.delta)
            if self.route:
                out.update(route=self.route, threshold=self.threshold, discovery_bound=self.discovery_bound)
        return out


@dataclass(frozen=True)
class CellDomain:
    """The public cells of a table: attribute domains (or just a number of cells), and how declared.

    ``values`` is None for a table given as cell numbers 0..m−1 with a declared m.
    """

    attributes: tuple[str, ...]
    values: tuple[tuple[str, ...], ...] | None
    how: str
    origin: str = ""
    epsilon: float = 0.0
    delta: float = 0.0
    cells: int | None = None  # m, when there are no attribute values

    @property
    def size(self) -> int:
        if self.values is None:
            return int(self.cells or 0)
        return int(np.prod(np.array([len(v) for v in self.values], dtype=object)))

    def statement(self) -> str:
        m = f"{self.size:,}"
        names = ", ".join(self.attributes)
        if self.how == HOW_LIST:
            return (f"The values of each attribute ({names}) were declared by the steward ({self.origin}) before "
                    f"the data was read: {m} cells in all.")
        if self.how == HOW_RANGE:
            return f"The cells are numbered 0 to {self.size - 1:,}, declared before the data was read."
        if self.how == HOW_PUBLIC_DATA:
            return PUBLIC_DOMAINS_STATEMENT + f" Attributes: {names}; {m} cells in all."
        return (f"The values of each attribute ({names}) were discovered privately: only values whose noisy "
                f"count passed a threshold are listed ({m} cells in all), which spent ε = {self.epsilon:.4g} and "
                f"δ = {self.delta:.3g} of this release's budget.")

    def describe(self) -> dict:
        out = {"how": self.how, "attributes": list(self.attributes), "cells": self.size,
               "statement": self.statement()}
        if self.origin:
            out["declared_in"] = self.origin
        if self.how == HOW_DISCOVERED:
            out.update(epsilon=self.epsilon, delta=self.delta)
        return out
