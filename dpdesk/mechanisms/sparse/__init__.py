"""Sparse-domain publication: Cormode, Procopiuc, Srivastava & Tran's shortcut summaries.

For a contingency table M of m cells with only n ≪ m non-empty, the laborious approach
(geometric noise on all m cells, then a summary) costs time and memory in m. The shortcut
draws the same summary — with exactly the same output distribution — from the n
non-empty cells, in time and memory proportional to n plus the output.

* :mod:`.laws` — what the laborious approach does to one empty cell: the probability p
  that it is listed and the law of its released value, for every summary;
* :mod:`.walk` — a Bernoulli(p) subset of the empty cells in O(k) (distinct cells);
* :mod:`.shortcut` — filter, threshold, priority and combined summaries;
* :mod:`.dyadic` — the dyadic-range transform, consistency check and range decomposition;
* :mod:`.sketch` — the noisy Count sketch;
* :mod:`.mechanisms` — the registered mechanisms (``geometric``, ``filter``, ``filter2``,
  ``threshold``, ``priority``, ``filter-threshold``, ``filter-priority``, ``dyadic``,
  ``sketch``); query answering lives in :mod:`dpdesk.evaluation.summaries`.
"""

from . import mechanisms  # noqa: F401  (registers the mechanisms)
from .dyadic import DyadicTree
from .laws import Selection, ZeroLaw, noise_mu
from .mechanisms import METHODS
from .shortcut import Summary

__all__ = ["DyadicTree", "METHODS", "Selection", "Summary", "ZeroLaw", "noise_mu"]
