"""Dyadic ranges over the 1-D order of the cells (Cormode et al. §3, App. C.5).

The cells 0..m−1 (mixed-radix order of the attributes, the last varying fastest) are the
leaves of a binary tree; level ℓ has ⌈m/2^ℓ⌉ nodes, node j of level ℓ counting the cells
[j·2^ℓ, (j+1)·2^ℓ) ∩ [0, m). There are L = ⌈log₂ m⌉ + 1 levels, the top one a single root.

Sensitivity. One person sits in one cell, so adding or removing them changes exactly one
node per level by 1: the L1 sensitivity of the whole transform is L (the number of
levels). Noise of scale L/ε on every node is ε-DP, and the shortcut summaries apply to the
transform as to any sparse vector: it has at most n·L non-zero nodes (fewer near the
root), and m′ = Σ_ℓ ⌈m/2^ℓ⌉ < 2m + L nodes in all.

Node numbers. Node j of level ℓ is ``offset[ℓ] + j`` with ``offset[ℓ] = Σ_{k<ℓ} ⌈m/2^k⌉``,
so a summary of the transform is again a list of (node, value[, weight]).

Consistency (§3). A node's true count is never below its descendants', so in a filtered
summary a node whose ancestor did not pass the filter is most likely noise:
:func:`consistent` drops it. This is post-processing of the filter output.

A range [a, b) is the disjoint union of at most 2 nodes per level (:func:`range_nodes`),
so it is answered from at most 2(L − 1) summary entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ParameterError

MAX_DOMAIN = 2**60  # node numbers of the transform stay below 2^61


@dataclass(frozen=True)
class DyadicTree:
    """The node numbering of the dyadic transform of a domain of ``domain_size`` cells."""

    domain_size: int

    def __post_init__(self) -> None:
        if not 1 <= self.domain_size <= MAX_DOMAIN:
            raise ParameterError(f"Dyadic ranges support domains of up to 2^60 cells, not {self.domain_size:,}.")

    @property
    def levels(self) -> int:
        """L = ⌈log₂ m⌉ + 1 (the sensitivity of the transform)."""
        return (self.domain_size - 1).bit_length() + 1

    def level_sizes(self) -> list[int]:
        return [-(-self.domain_size // (1 << level)) for level in range(self.levels)]

    def offsets(self) -> np.ndarray:
        """First node number of each level, plus the total m′ at the end (int64)."""
        return np.concatenate([[0], np.cumsum(self.level_sizes())]).astype(np.int64)

    @property
    def node_count(self) -> int:
        return int(self.offsets()[-1])

    def node_level(self, nodes: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.offsets(), np.asarray(nodes, dtype=np.int64), side="right") - 1

    def node_ranges(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The cells [start, stop) each node counts."""
        nodes = np.asarray(nodes, dtype=np.int64)
        level = self.node_level(nodes)
        position = nodes - self.offsets()[level]
        start = position << level
        stop = np.minimum((position + 1) << level, self.domain_size)
        return start, stop

    def transform(self, indices: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Non-zero node numbers (sorted) and their counts, from sorted cells and counts."""
        offsets = self.offsets()
        nodes, sums = [], []
        for level in range(self.levels):
            positions = indices >> level
            if positions.size == 0:
                break
            starts = np.flatnonzero(np.concatenate([[True], positions[1:] != positions[:-1]]))
            nodes.append(offsets[level] + positions[starts])
            sums.append(np.add.reduceat(counts, starts))
        if not nodes:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(nodes), np.concatenate(sums).astype(np.int64)

    def consistent(self, nodes: np.ndarray) -> np.ndarray:
        """Which of the sorted released ``nodes`` have every ancestor released too (bool mask)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        offsets = self.offsets()
        level = self.node_level(nodes)
        keep = np.zeros(nodes.size, dtype=bool)
        kept_above = None  # kept node numbers of the level above
        for current in range(self.levels - 1, -1, -1):
            here = np.flatnonzero(level == current)
            if kept_above is None:  # the root has no ancestor
                keep[here] = True
            elif kept_above.size:
                parents = offsets[current + 1] + ((nodes[here] - offsets[current]) >> 1)
                found = np.minimum(np.searchsorted(kept_above, parents), kept_above.size - 1)
                keep[here] = kept_above[found] == parents
            kept_above = nodes[here[keep[here]]]
        return keep

    def range_nodes(self, starts, stops) -> tuple[np.ndarray, np.ndarray]:
        """Canonical decomposition of ranges [start, stop): (query number, node number) pairs."""
        low = np.asarray(starts, dtype=np.int64).copy()
        high = np.asarray(stops, dtype=np.int64).copy()
        if np.any(low < 0) or np.any(high > self.domain_size) or np.any(low > high):
            raise ParameterError(f"Ranges must lie within 0..{self.domain_size} with start ≤ stop.")
        offsets = self.offsets()
        query = np.arange(low.size)
        queries, nodes = [], []
        for level in range(self.levels):
            open_ = low < high
            if not open_.any():
                break
            take_low = open_ & ((low & 1) == 1)
            queries.append(query[take_low])
            nodes.append(offsets[level] + low[take_low])
            low[take_low] += 1
            take_high = (low < high) & ((high & 1) == 1)
            high[take_high] -= 1
            queries.append(query[take_high])
            nodes.append(offsets[level] + high[take_high])
            low >>= 1
            high >>= 1
        if not nodes:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(queries), np.concatenate(nodes)
