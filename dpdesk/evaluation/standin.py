"""Stand-in data for comparisons that leak nothing (docs/ARCHITECTURE.md §3).

Comparing mechanisms on the true data and picking the one with the lowest error is a
data-dependent choice. A stand-in avoids that: synthetic data shaped only by facts the
steward *declares* (number of people, items, the bound Δ, how many items a typical person
has, how unequal item popularity is) or a public file. Nothing here reads the true data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..data.dataset import CellCounts, Dataset
from ..errors import ParameterError


@dataclass
class DeclaredFacts:
    """Public facts a synthetic stand-in is built from (all declared, none measured)."""

    rows: int
    items: int
    mean_items_per_person: float
    bound: int | None = None
    skew: float = 1.0  # Zipf exponent of item popularity: 0 = all alike, 1–1.5 = typical baskets

    def check(self) -> "DeclaredFacts":
        if self.rows < 1 or self.items < 1:
            raise ParameterError("A stand-in needs at least one person and one item.")
        if not 0 < self.mean_items_per_person <= self.items:
            raise ParameterError("The typical number of items per person must be between 0 and the number of items.")
        if self.bound is not None and self.bound < 1:
            raise ParameterError("The declared bound must be at least 1.")
        if not 0 <= self.skew <= 4:
            raise ParameterError("The skew must be between 0 (all items alike) and 4.")
        return self


def synthetic_incidence(facts: DeclaredFacts, *, item_labels=None, seed: int = 0) -> Dataset:
    """A random person × item matrix with the declared shape (reproducible by seed)."""
    facts.check()
    rng = np.random.default_rng(seed)
    top = facts.items if facts.bound is None else min(facts.items, facts.bound)
    # row lengths: geometric with the declared mean (heavy enough tail), capped at the bound
    p = 1.0 / (1.0 + facts.mean_items_per_person)
    lengths = np.minimum(rng.geometric(p, size=facts.rows) - 1, top)
    weights = 1.0 / np.arange(1, facts.items + 1) ** facts.skew
    weights /= weights.sum()
    popularity_order = rng.permutation(facts.items)  # which item is popular is not declared: shuffle
    total = int(lengths.sum())
    draws = popularity_order[np.searchsorted(np.cumsum(weights), rng.random(total * 2 + 16), side="right")
                             .clip(0, facts.items - 1)]
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = draws[:total]
    matrix = sp.csr_matrix((np.ones(total, dtype=np.uint8), indices.astype(np.int32), indptr),
                           shape=(facts.rows, facts.items))
    matrix.sum_duplicates()
    matrix.data = np.ones(matrix.data.size, dtype=np.uint8)
    labels = np.array(item_labels if item_labels is not None else [str(j) for j in range(facts.items)], dtype=object)
    return Dataset(matrix, labels, name="synthetic stand-in", source={"format": "synthetic", "facts": facts.__dict__})


def declared_shape(data, declaration) -> tuple[int, np.ndarray | None]:
    """The number of items (or cells) and the item labels a stand-in may take: the declaration's.

    A list or a range is read from the declaration; the data's own labels (or cells) only when
    the steward stated they are public. Anything else would shape the stand-in by the true data
    (e.g. a file with 75 items under a declared ``range:1000``), so it is refused in words.
    """
    from ..data.domain import HOW_LIST, HOW_PUBLIC_DATA, HOW_RANGE, declared_cell_domain, declared_domain

    what = "cells" if data.kind == "cells" else "items"
    if declaration is None:
        raise ParameterError(f"A stand-in is shaped by declared facts only: first declare the published {what} "
                             "(the last step of the import).")
    if declaration.kind == HOW_PUBLIC_DATA:
        if data.kind == "cells":
            return int(data.domain_size), None
        return int(data.n_items), np.asarray(data.item_labels, dtype=object)
    if data.kind == "cells":
        if declaration.kind == HOW_LIST:
            return declared_cell_domain(declaration.path, list(data.attributes or []) or None).size, None
        if declaration.kind == HOW_RANGE:
            return int(declaration.size), None
    elif declaration.kind in (HOW_LIST, HOW_RANGE):
        domain = declared_domain(declaration)
        return int(domain.size), domain.labels
    raise ParameterError(f"The {what} are to be discovered privately, so their number is not declared and a "
                         f"synthetic stand-in cannot be shaped without the true data. Compare on a public file, or "
                         f"declare the {what} another way.")


def synthetic_cells(domain_size: int, cells: int, people: int, *, seed: int = 0) -> CellCounts:
    """A sparse table with the declared number of non-zero cells and people (for sparse summaries)."""
    if not 0 < cells <= domain_size or people < cells:
        raise ParameterError("Declare 0 < non-zero cells ≤ domain size and at least one person per cell.")
    rng = np.random.default_rng(seed)
    chosen = np.unique(rng.integers(0, domain_size, size=cells * 2))[:cells] if domain_size > 10 * cells \
        else rng.choice(domain_size, size=cells, replace=False)
    counts = 1 + rng.multinomial(people - chosen.size, np.full(chosen.size, 1.0 / chosen.size))
    return CellCounts(chosen, counts, domain_size, name="synthetic stand-in", source={"format": "synthetic"},
                      domains_declared=True)
