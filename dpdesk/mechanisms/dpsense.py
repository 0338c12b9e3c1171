"""DPSense and DPSense-S (Day & Li): private sensitivity control for column counts.

Without a declared bound Δ one person can change every count: the sensitivity of the
count vector is d. DPSense (Alg. 1) instead *normalizes* each person's row so that it
sums to at most a threshold θ, which caps the sensitivity at θ, and chooses θ itself
with the exponential mechanism, scoring every candidate by how much of the data it keeps
against how much noise it needs. DPSense-S (Alg. 2) also chooses a factor α ∈ [1, 2]
that scales the released counts up, correcting the under-estimate normalization causes.
Only d (the number of items) is public; no bound Δ is needed (§4.2).

Steps (ε = ε_c + ε_p, by default 10% / 90%):

1. score every candidate θ ∈ Θ = {1, …, d} (DPSense) or (θ, α) ∈ Θ × A with
   A = {1, 1 + 1/N, …, 2} (DPSense-S, N = 100 steps by default) and choose one with
   the exponential mechanism (ε_c);
2. normalize row i by the weight min(1, θ/RC_i) (row sums ≤ θ), add noise of scale
   θ/ε_p to every column count of the normalized data (ε_p);
3. set negative counts to 0; DPSense-S multiplies by α* (post-processing).

Non-binary data (§4.4)
----------------------
With a declared maximum cell value r, cells above r are capped at r; the query is the
column sums of the values, "row count" becomes the row sum, and the threshold grid is
Θ = {s, 2s, …, d·s} with step s = R/V ≤ r (below), which spans every possible row sum
(at most r·d), as §4.4 says θ must be allowed to grow by up to r times. The quality
functions' sensitivity becomes R/V ≤ r.

Without a declared r every non-zero cell counts as 1 (the yes/no view, V = R = 1, s = 1),
*whatever values the data holds*. The value grid V, the step s, the sensitivity and the
lattice of the released counts are therefore functions of the declared r (or its absence)
alone: a person whose cell holds a 2 cannot switch the release from one grid to another
(issue #13, B2). Whether the data had values other than 1 is reported internally only.

Exact integer layout
--------------------
Everything runs in integers, so the release is exact and each score is built from exact
integers (the few float steps after them are bounded below):

* cell values t_ij = 1 without a declared r (V = R = 1); with one, t_ij = min(⌊v_ij·V⌋, R),
  V = 2^max(0, ⌈log2(32/r)⌉) and R = ⌊r·V⌋ (values on a 1/V grid, resolution at least
  r/32); row totals T_i = Σ_j t_ij ≤ R·d; column totals c_j = Σ_i t_ij;
* candidate k ∈ {1, …, d} means θ = k·R (in units of 1/V);
* a row is *long* at k when T_i > kR; its weight is rounded down to the power-of-two
  grid 1/K: w_i(k) = kR·u_i / K with u_i = ⌊K/T_i⌋, and w_i = 1 otherwise. Then
  w_i(k)·T_i ≤ kR·(K/T_i)·T_i/K = kR: every normalized row sums to at most θ. The grid is
  K = 2^max(20, ⌈log2(R·d)⌉ + 4) ≥ 16·T_i, so the rounding costs a long row less than
  T_i/K of its weight: 1/16 in the extreme case of a person holding every item, 0.2%
  for kosarak's longest row.
* The normalized column count in units of 1/(K·V) is the integer
  C_j(k) = K·(c_j − A_j(k)) + kR·U_j(k), with A_j(k) = Σ_{long i} t_ij and
  U_j(k) = Σ_{long i} u_i·t_ij.

Release: exact Laplace noise of scale θ*/ε_p
--------------------------------------------
Adding or removing one person changes the integer vector C by their normalized row, whose
entries are ≥ 0 and sum to w_i·T_i·K ≤ kR·K grid units: the L1 sensitivity of C is kR·K.
Exact discrete Laplace noise of scale kR·K/ε_p (dpdesk.privacy.noise, the geometric
mechanism) on C is therefore ε_p-DP, with no floating point anywhere; divided by K·V it
is noise of scale θ*/ε_p in value units, as in Alg. 1 line 10. No extra ε is spent: the
grid is absorbed by rounding the weights *down*, which only lowers each row's sum. The
sampler takes scales up to 2^50 grid units; when kR·K/ε_p would exceed 2^48 the release
uses a coarser grid K' = 2^⌊log2(2^48·ε_p/(kR))⌋ < K (the same argument with
u_i' = ⌊K'/T_i⌋; K' is a function of the already chosen θ* and of ε_p only), and
``check`` refuses settings where even K' = 1 would not do.

Quality functions and their sensitivity
---------------------------------------
* DPSense, Eq. 3: q(θ) = ac(D|θ) − θ/ε_p with ac = (1/d)·Σ_j c^θ_j. Adding a person
  adds their normalized row sum, at most min(T_i, kR)/V ≤ R·k/V, divided by d: at most
  R/V (Lemma 1: 1 for binary data). Adding a person never lowers any q(θ): the scores
  move in one direction, so besides the standard form Pr ∝ exp(ε_c·q/(2Δq)) (the
  pseudocode's exp(ε_c·q/2)) the one-directional form exp(ε_c·q/Δq) is also ε_c-DP (§4.1).
* DPSense-S, Eq. 6: q_s(θ, α) = −(1/d)·Σ_j |α·c^θ_j − c_j| − α·θ/ε_p. Adding a person
  with normalized weight w changes Σ_j |α·c^θ_j − c_j| by at most
  Σ_j |α·w − 1|·t_ij ≤ max(1, α − 1)·T_i ≤ R·d for α ≤ 2, so the sensitivity is R/V
  (Lemma 2). These scores do *not* move in one direction (for α = 1 adding a long row
  raises the error; for α = 2 it can lower it), so only the standard form is valid and
  DPSense-S always uses it.

Both scores are computed from exact integers: DPSense's numerator S(k) = Σ_j C_j(k),
and for DPSense-S the bins of the sweep below. Their entries are at most
(2N + 1)·K·max_j c_j or K·M; when either could reach 2^62 (only for enormous data) the
tables are built from Python integers instead of int64 — the same exact values, slower —
so no dataset is refused for its size (issue #13, B4). The float steps after them (one
conversion of each integer, DPSense-S's combination a·X + N·K·Y of two exact integers
with |X| ≤ K·M and |Y| ≤ M, one division, and the subtraction of the data-independent
α·θ/ε_p) move a score by at most 20·2⁻⁵³·(A + P) with A = 2⁴⁰·R/(V·d) and
P = 2·d·R/(V·ε_p) — because M ≤ (non-zero cells)·R < 2⁴⁰·R for any data held in memory,
every average count is below A, and every penalty below P. That bound (``score_error``)
is a function of declared values only; the exponential mechanism widens the sensitivity
by twice it (at most 0.5%/d of Δq, plus 2⁻⁴⁶·d/ε_p of it), so the computed scores are covered by the proof and
the selection's calibration does not depend on the data.

How sharply θ is chosen (issue 29)
----------------------------------
Pr[(θ, α)] ∝ exp(ε_c·q/(2Δq)) with q = data term − α·θ/ε_p. The penalty alone weighs θ by
exp(−(ε_c/(2ε_p))·α·θ) = exp(−s/(2(1 − s))·α·θ) for the selection share s: the same at every ε.
The data term, an average error in counts, differs between sensible θ by about the noise
θ/ε_p itself, which the factor ε_c/2 turns into s/(2(1 − s))·(a few θ) nats — also the same at
every ε. So at the paper's s = 10% (0.056 nats per unit of α·θ) the mechanism cannot tell
θ = 5 from θ = 25 at any ε: over 12 seeds θ* spans 1–73 on retail and the published MAE
varies up to 47-fold (lastfm, ε = 0.1). Nothing is wrong with the exponential mechanism: its
resolution 2Δq/ε_c is as coarse as the differences it must resolve. The remedy is more of ε
for the choice: DPSense-S's default share is 30% (0.21 nats per unit), which over the 7 real
datasets at ε ∈ {0.1, ln 2, 1, 2} lowers the mean published MAE to 0.71× (geometric mean) and
the largest spread over seeds from 47× to 7.9× (median 3.7× to 1.9×);
``benchmarks/bench_dpsense.py --stability`` prints the table. DPSense keeps the paper's 10%.

Efficiency (DPSense §4, the issue's notes)
------------------------------------------
* DPSense: S(k) = K·(M − Σ_{long} T_i) + kR·Σ_{long} u_i·T_i with M = Σ c_j; with the
  long rows sorted by T, both sums are prefix sums: every θ at once in O(n log n + d).
* DPSense-S: C_j(k) changes only through the long rows. Sweeping k from the largest row
  total down to 1, each row enters the long set once (O(nnz) updates of A and U in
  all), and only columns some long row touches can differ from c_j (columns are ordered
  by the largest row total that touches them, so those are a prefix). For fixed k,
  Σ_j |a·C_j − N·K·c_j| is piecewise linear in a with a kink at each column's ratio
  a_j = ⌈N·K·c_j / C_j⌉: binning the columns by a_j and taking prefix sums of C and c over
  the bins gives all N + 1 values of α at once, in O(m(k) + N) instead of O(N·d).
  For k at or above the largest row total nothing is long and the score has the closed
  form −(α − 1)·M/(V·d) − α·θ/ε_p; every θ in 1..d stays a candidate.
* The integer tables do not depend on ε and are cached per dataset and (r, N); the
  prepared state per ε split adds the float scores and the exponential mechanism's
  :class:`~dpdesk.privacy.exponential.Sampler`; a release only draws from it, computes
  the chosen θ's counts from its long rows (cached) and adds noise.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from ..arrays import blockwise_at, blockwise_repeat, gather_rows
from ..errors import DataError, ParameterError
from ..privacy import exponential
from ..privacy.budget import BudgetSplit
from ..privacy.noise import discrete_laplace
from ..tasks import CancelToken, ProgressFn, scaled as scaled_progress
from . import register
from .base import NO_BOUND, Diagnostic, Mechanism, Param, counts_error
from .publish import discrete_laplace_margin

FAMILY = "Sensitivity control (Day & Li, DPSense)"
#: why DPSense publishes no margin of error (dpdesk.mechanisms.publish; issue 28)
NO_MARGIN = ("scaling the rows of people with more than θ* items down to θ* lowers each count by a share that depends "
             "on who holds the item, and among the many small counts the noise pushes up, the release cannot tell "
             "which of the large values lost the most")
PAPER = "Day & Li, Differentially Private Publishing of High-dimensional Data Using Sensitivity Control (DPSense)"

MAX_GRID_NOISE = 2.0**48  # largest noise scale in grid units we ask of the sampler (limit 2^50)
INT64_SAFE = 2**62  # integer tables whose entries could reach this use Python integers (same values, slower)
CELL_LIMIT = 2**40  # fewer non-zero cells than this in any dataset held in memory (its indices alone: 4 TiB)
LARGEST_VALUE = 2**20  # the largest declarable r: keeps every cell, row and column total within int64
UNIT_ROUNDOFF = 2.0**-53

SELECTION_SHARE = Param(
    "selection_share", "float", 0.1, label="Share of ε for choosing θ",
    help="Part of ε spent on choosing the threshold θ (ε_c); the rest (ε_p) pays for the noisy counts. "
         "The paper uses 10%. On small datasets (average count below a few hundred) a larger share, such as "
         "30%, chooses θ and α more reliably.",
    minimum=0.01, maximum=0.99, reference="DPSense §4.1, Alg. 1 line 2", advanced=True)
MAX_VALUE = Param(
    "max_value", "float", None, label="Declared maximum cell value r",
    help="For data with values (ratings, amounts): the largest value one cell may hold, declared by you "
         "before looking at the data. Larger values are capped at r. Leave empty to count every non-zero cell "
         "as 1 (yes/no data), whatever values the file holds. Never set it from the data's observed maximum: "
         "that is not private.",
    minimum=1e-6, maximum=LARGEST_VALUE, unit="per cell", reference="DPSense §4.4")
SELECTION_FORM = Param(
    "selection_form", "choice", "standard", label="Exponential mechanism form",
    choices=("standard", "one-directional"),
    help="standard: Pr[θ] ∝ exp(ε_c·q(θ)/2), as in the paper's pseudocode. one-directional: "
         "Pr[θ] ∝ exp(ε_c·q(θ)), also ε_c-DP here because adding a person raises every score (§4.1); "
         "it concentrates more on the best θ.",
    reference="DPSense §4.1, Alg. 1 line 8", advanced=True)
SCALED_SELECTION_SHARE = dataclasses.replace(
    SELECTION_SHARE, default=0.3,
    help="Part of ε spent on choosing the threshold θ and the factor α (ε_c); the rest (ε_p) pays for the noisy "
         "counts. The paper uses 10%, which leaves the choice almost to chance at any ε (θ varied from 1 to 73 "
         "over 12 runs on retail): dpdesk uses 30%.",
    reference="DPSense §4.3, Alg. 2; dpdesk/mechanisms/dpsense.py, \"How sharply θ is chosen\"")
ALPHA_STEPS = Param(
    "alpha_steps", "int", 100, label="Steps of the scaling factor α",
    help="α is chosen from {1, 1 + 1/N, …, 2} with N steps (the paper: N = 100, i.e. 1.00, 1.01, …, 2.00). "
         "α stays at most 2 so that the quality function's sensitivity stays 1.",
    minimum=1, maximum=200, reference="DPSense §4.3, Alg. 2 line 2", advanced=True)

_TABLES: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()
_TABLES_PER_DATASET = 6


# --- the exact integer layout ------------------------------------------------------------

def value_grid(max_value: float | None) -> tuple[int, int]:
    """(V, R) from the declared maximum cell value r alone: cells are counted in units of 1/V
    and capped at R = ⌊r·V⌋; without r every non-zero cell counts as 1 (V = R = 1). Module notes."""
    if max_value is None:
        return 1, 1
    grid = 2 ** max(0, math.ceil(math.log2(32.0 / max_value)))
    return grid, max(1, int(math.floor(max_value * grid)))


def weight_grid(cell_max: int, n_items: int) -> int:
    """K, the power-of-two grid of the row weights: at least 16 times any possible row total."""
    return 2 ** max(20, math.ceil(math.log2(max(1, cell_max * n_items))) + 4)


def declared_max_value(params: dict) -> float | None:
    """r as declared, or None: every non-zero cell then counts as 1, whatever the data holds."""
    r = params.get("max_value")
    return None if r is None else float(r)


def score_error(cell_max: int, value_grid: int, n_items: int, epsilon_counts: float) -> float:
    """How far a computed score can be from its exact value, from declared values only (module notes)."""
    largest_average = CELL_LIMIT * cell_max / (value_grid * n_items)
    largest_penalty = 2.0 * n_items * cell_max / (value_grid * epsilon_counts)
    return 20 * UNIT_ROUNDOFF * (largest_average + largest_penalty)


@dataclass
class Layout:
    """The data as exact integers, ordered for the threshold sweep (independent of ε).

    Long rows are those with T_i > R (the only ones any k ≥ 1 can normalize), sorted by
    T descending; their cells are stored contiguously with column *positions* in an order
    where the columns touched by longer rows come first.
    """

    value_grid: int  # V
    cell_max: int  # R
    weight_grid: int  # K
    n_items: int  # d
    mass: int  # M = Σ t_ij
    column_totals: np.ndarray  # c_j, original column order (int64)
    column_order: np.ndarray  # position → original column
    column_reach: np.ndarray  # per position: the largest row total touching it (descending)
    long_totals: np.ndarray  # T of the long rows, descending
    long_units: np.ndarray  # u_i = ⌊K/T_i⌋ of the long rows
    long_starts: np.ndarray  # cell offsets of the long rows (length n_long + 1)
    long_positions: np.ndarray  # column position of each long-row cell
    long_cells: np.ndarray | None  # t of each long-row cell (None: all 1)
    long_weights: np.ndarray  # u_i·t_ij of each long-row cell
    largest_column: int = 0  # max_j c_j: how large the integer tables can get (internal)
    #: people behind each long "row" when the layout is built from counts by row length (engine data):
    #: all people with the same total T are one row whose cells hold their summed t_ij; None: one each
    long_people: np.ndarray | None = None

    @property
    def top_level(self) -> int:
        """k_H: the smallest k at which no row is long (≤ d)."""
        if self.long_totals.size == 0:
            return 1
        return -(-int(self.long_totals[0]) // self.cell_max)

    def thetas(self) -> np.ndarray:
        """θ for k = 1..d in value units."""
        return np.arange(1, self.n_items + 1, dtype=np.float64) * (self.cell_max / self.value_grid)

    def __post_init__(self) -> None:
        # ascending copies for searchsorted (the arrays themselves are descending)
        self._long_ascending = self.long_totals[::-1].copy()
        self._reach_ascending = self.column_reach[::-1].copy()

    def long_count(self, k) -> np.ndarray:
        """Number of long rows (T > kR) for each k."""
        bound = np.asarray(k, dtype=np.int64) * self.cell_max
        return self._long_ascending.size - np.searchsorted(self._long_ascending, bound, side="right")

    def people_normalized(self, k: int) -> int:
        """Internal: how many people are long (normalized) at level k."""
        rows = int(self.long_count(k))
        return rows if self.long_people is None else int(self.long_people[:rows].sum())

    def affected(self, k) -> np.ndarray:
        """Number of column positions some long row touches, for each k."""
        bound = np.asarray(k, dtype=np.int64) * self.cell_max
        return self._reach_ascending.size - np.searchsorted(self._reach_ascending, bound, side="right")

    def cell_range(self, first: int, stop: int) -> slice:
        """The cells of long rows first..stop−1."""
        return slice(int(self.long_starts[first]), int(self.long_starts[stop]))

    def cell_weights(self, first: int, stop: int, grid: int) -> np.ndarray:
        """u_i·t_ij with u_i = ⌊grid/T_i⌋ for every cell of long rows first..stop−1."""
        if grid == self.weight_grid:
            return self.long_weights[self.cell_range(first, stop)]
        return cell_weights(grid // self.long_totals[first:stop], np.diff(self.long_starts[first:stop + 1]),
                            None if self.long_cells is None else self.long_cells[self.cell_range(first, stop)])

    def cell_values(self, first: int, stop: int):
        """t_ij for every cell of long rows first..stop−1 (1 for binary data)."""
        return 1 if self.long_cells is None else self.long_cells[self.cell_range(first, stop)]

    @property
    def totals_by_position(self) -> np.ndarray:
        return self.column_totals[self.column_order]

    def integer_type(self, steps: int = 0):
        """int64, or ``object`` (Python integers: the same exact values) when an entry of the
        tables — at most K·M, and (2N + 1)·K·max_j c_j with N = ``steps`` — could reach 2^62."""
        largest = max(self.weight_grid * (self.mass + 1),
                      (2 * steps + 1) * self.weight_grid * (self.largest_column + 1))
        return object if largest >= INT64_SAFE else np.int64


def cell_weights(units: np.ndarray, lengths: np.ndarray, cells: np.ndarray | None) -> np.ndarray:
    """Each row's unit u_i repeated over its cells, times t_ij (None: all 1)."""
    weights = blockwise_repeat(units, lengths)
    if cells is not None:
        weights *= cells
    return weights


def integer_layout(data, max_value: float | None) -> Layout:
    """Build the :class:`Layout` of ``data`` for the declared maximum cell value r (None: yes/no view)."""
    if getattr(data, "engine", None) is not None:
        return histogram_layout(data, max_value)
    matrix = data.matrix
    n_items = data.n_items
    if matrix.nnz >= CELL_LIMIT:  # cannot happen for data held in memory; score_error relies on it
        raise DataError(f"the dataset has {matrix.nnz:,} non-zero cells", expected=f"fewer than {CELL_LIMIT:,}")
    grid, cell_max = value_grid(max_value)
    big_k = weight_grid(cell_max, n_items)
    indptr = matrix.indptr.astype(np.int64)
    if max_value is None:  # the yes/no view: every stored cell counts as 1, whatever value it holds
        cells = None
        row_totals = np.diff(indptr)
        column_totals = np.bincount(matrix.indices, minlength=n_items).astype(np.int64)
    else:
        values = np.minimum(np.floor(np.asarray(matrix.data, dtype=np.float64) * grid), cell_max)
        cells = values.astype(np.int64)
        running = np.concatenate([[0], np.cumsum(cells)])
        row_totals = running[indptr[1:]] - running[indptr[:-1]]
        column_totals = np.zeros(n_items, dtype=np.int64)
        blockwise_at(np.add, column_totals, matrix.indices, cells)
    mass = int(column_totals.sum())
    long_rows = np.flatnonzero(row_totals > cell_max)
    longest = int(row_totals[long_rows].max()) if long_rows.size else 0
    keys = longest - row_totals[long_rows]  # longest first
    if longest < 2**16:
        keys = keys.astype(np.uint16)  # numpy sorts 16-bit keys by radix: several times faster
    long_rows = long_rows[np.argsort(keys, kind="stable")]
    long_totals = row_totals[long_rows]
    positions = gather_rows(indptr, long_rows)
    long_columns = matrix.indices[positions]
    lengths = np.diff(indptr)[long_rows]
    reach = np.zeros(n_items, dtype=np.int64)
    blockwise_at(np.maximum, reach, long_columns, blockwise_repeat(long_totals, lengths))
    column_order = np.argsort(-reach, kind="stable")
    position_of = np.empty(n_items, dtype=np.int32 if n_items < 2**31 else np.int64)
    position_of[column_order] = np.arange(n_items)
    long_units = big_k // np.maximum(long_totals, 1)
    long_cells = None if cells is None else cells[positions]
    return Layout(
        value_grid=grid, cell_max=cell_max, weight_grid=big_k, n_items=n_items, mass=mass,
        column_totals=column_totals, column_order=column_order, column_reach=reach[column_order],
        long_totals=long_totals, long_units=long_units, long_starts=np.concatenate([[0], np.cumsum(lengths)]),
        long_positions=position_of[long_columns], long_cells=long_cells,
        long_weights=cell_weights(long_units, lengths, long_cells),
        largest_column=int(column_totals.max()) if n_items else 0)


def histogram_layout(data, max_value: float | None) -> Layout:
    """The same :class:`Layout` from counts by row length (data held by an engine, all cells 1).

    Every person with ℓ items has the row total T = ℓ·t (t = min(V, R), a cell of value 1)
    and the unit u = ⌊K/T⌋: the sweep's integer sums A_j(k) and U_j(k) add up the same
    numbers whether each person is a row or all people of one length are one row whose
    cell j holds t times their number (``long_people`` counts them in the totals). So the
    scores, the choice and the counts are exactly those of :func:`integer_layout`.
    """
    n_items = data.n_items
    if data.nnz >= CELL_LIMIT:  # pragma: no cover - score_error relies on it
        raise DataError(f"the dataset has {data.nnz:,} non-zero cells", expected=f"fewer than {CELL_LIMIT:,}")
    grid, cell_max = value_grid(max_value)
    big_k = weight_grid(cell_max, n_items)
    unit = min(grid, cell_max)  # t_ij of a cell holding 1: ⌊1·V⌋ capped at R
    column_totals = data.column_counts.astype(np.int64) * unit
    mass = int(data.nnz) * unit
    shortest = cell_max // unit  # long rows have ℓ·t > R
    columns, lengths, people = data.item_length_counts(shortest)
    order = np.lexsort((columns, -lengths))  # longest first, as integer_layout orders its rows
    columns, lengths, people = columns[order], lengths[order], people[order]
    row_lengths, starts = np.unique(-lengths, return_index=True)
    row_lengths = -row_lengths
    row_lengths_all, row_people = data.length_counts()
    people_of = dict(zip(row_lengths_all.tolist(), row_people.tolist()))
    long_totals = row_lengths * unit
    long_people = np.array([people_of[int(length)] for length in row_lengths], dtype=np.int64)
    cell_counts = np.diff(np.append(starts, lengths.size))
    reach = np.zeros(n_items, dtype=np.int64)
    np.maximum.at(reach, columns, lengths * unit)
    column_order = np.argsort(-reach, kind="stable")
    position_of = np.empty(n_items, dtype=np.int32 if n_items < 2**31 else np.int64)
    position_of[column_order] = np.arange(n_items)
    long_units = big_k // np.maximum(long_totals, 1)
    long_cells = people * unit
    return Layout(
        value_grid=grid, cell_max=cell_max, weight_grid=big_k, n_items=n_items, mass=mass,
        column_totals=column_totals, column_order=column_order, column_reach=reach[column_order],
        long_totals=long_totals, long_units=long_units, long_starts=np.concatenate([[0], np.cumsum(cell_counts)]),
        long_positions=position_of[columns], long_cells=long_cells,
        long_weights=cell_weights(long_units, cell_counts, long_cells),
        largest_column=int(column_totals.max()) if n_items else 0, long_people=long_people)


# --- scores --------------------------------------------------------------------------------

def kept_totals(layout: Layout) -> np.ndarray:
    """S(k) = Σ_j C_j(k) for k = 1..d (exact integers): the normalized data's total, K·V units."""
    integer = layout.integer_type()
    k = np.arange(1, layout.n_items + 1, dtype=np.int64)
    rows = layout.long_count(k)
    people = 1 if layout.long_people is None else layout.long_people
    long_mass = np.concatenate([[0], np.cumsum(layout.long_totals * people)])
    # each u_i·T_i ≤ K, and k·R·u_i·T_i < K·T_i: every entry stays below K·M
    long_kept = np.concatenate([[0], np.cumsum((layout.long_units * layout.long_totals * people).astype(integer))])
    return (layout.weight_grid * (layout.mass - long_mass[rows]).astype(integer)
            + k.astype(integer) * layout.cell_max * long_kept[rows])


def average_kept(layout: Layout) -> np.ndarray:
    """ac(D|θ) for θ = 1..d (value units)."""
    return (np.asarray(kept_totals(layout), dtype=np.float64)
            / float(layout.weight_grid * layout.value_grid * layout.n_items))


def _sweep(layout: Layout, levels, cancel: CancelToken | None = None, integer=np.int64):
    """Visit the levels k (descending), yielding (k, m, A, U) with the long rows of k added.

    ``A`` and ``U`` are indexed by column position; only the first ``m`` positions can
    differ from the unnormalized data. U (at most K·c_j) has the type ``integer``.
    """
    d = layout.n_items
    removed = np.zeros(d, dtype=np.int64)  # A: cells of long rows (at most c_j)
    units = np.zeros(d, dtype=integer)  # U: u_i·t_ij of long rows
    added = 0
    for step, k in enumerate(levels):
        if cancel is not None and step % 64 == 0:
            cancel.check()
        rows = int(layout.long_count(k))
        if rows > added:
            where = layout.long_positions[layout.cell_range(added, rows)]
            np.add.at(removed, where, layout.cell_values(added, rows))
            np.add.at(units, where, layout.cell_weights(added, rows, layout.weight_grid))
            added = rows
        yield int(k), int(layout.affected(k)), removed, units


@dataclass
class ScaledTables:
    """ae(D, D|θ) for every k = 1..d and α = a/N, a = N..2N (value units, from exact integers)."""

    steps: int  # N
    average_error: np.ndarray  # shape (d, N + 1)


def scaled_error_table(layout: Layout, steps: int, progress: ProgressFn, cancel: CancelToken | None) -> ScaledTables:
    """ae(k, a) = (1/d)·Σ_j |α·c^θ_j − c_j| for all k and α, by the sweep of the module notes."""
    d, big_k, big_n = layout.n_items, layout.weight_grid, steps
    integer = layout.integer_type(steps)
    top = layout.top_level
    bin_kept = np.zeros((top, big_n + 1), dtype=integer)  # Σ C_j over columns whose kink is at a = N + b
    bin_true = np.zeros((top, big_n + 1), dtype=np.int64)  # Σ c_j over the same columns
    totals = layout.totals_by_position
    c = totals.astype(integer)
    kinks_numerator = big_n * big_k * c
    work = np.empty(d, dtype=integer)
    for k, m, removed, units in _sweep(layout, range(top - 1, 0, -1), cancel, integer):
        if (top - k) % 128 == 0:
            progress((top - k) / top, f"Scoring θ = {k}")
        kept = work[:m]
        np.subtract(c[:m], removed[:m], out=kept)
        kept *= big_k
        kept += units[:m] * (k * layout.cell_max)
        # each affected column has C_j < K·c_j, so its kink a_j = ⌈N·K·c_j/C_j⌉ > N; beyond 2N it never bends.
        # A column whose cells all round to 0 has C_j = c_j = 0 and adds nothing to any bin.
        kinks = (kinks_numerator[:m] + kept - 1) // np.maximum(kept, 1)
        bins = np.clip(kinks - big_n, 0, big_n + 1).astype(np.int64)
        inside = bins <= big_n
        np.add.at(bin_kept[k], bins[inside], kept[inside])
        np.add.at(bin_true[k], bins[inside], totals[:m][inside])
    table = np.empty((d, big_n + 1), dtype=np.float64)
    a = np.arange(big_n, 2 * big_n + 1, dtype=np.float64)
    denominator = float(big_n * big_k * layout.value_grid * d)  # exact: N·d < 2^39 times powers of two
    if top > 1:
        ks = np.arange(1, top)
        untouched = np.concatenate([np.cumsum(totals[::-1])[::-1], [0]])[layout.affected(ks)]  # Σ_{j ≥ m} c_j
        covered_kept = big_k * untouched.astype(integer)[:, None] + np.cumsum(bin_kept[1:], axis=1)
        covered_true = untouched[:, None] + np.cumsum(bin_true[1:], axis=1)
        total_kept = kept_totals(layout)[: top - 1, None]  # Σ_j C_j(k)
        # exact integers |X| ≤ K·M and |Y| ≤ M, combined in float (module notes: score_error)
        spread = np.asarray(2 * covered_kept - total_kept, dtype=np.float64)
        balance = np.asarray(layout.mass - 2 * covered_true, dtype=np.float64)
        table[: top - 1] = (a * spread + float(big_n * big_k) * balance) / denominator
    table[top - 1:] = ((a - big_n) / big_n) * (layout.mass / float(layout.value_grid * d))
    progress(1.0, "Scores ready")
    return ScaledTables(big_n, table)


# --- the released counts --------------------------------------------------------------------

def release_grid(layout: Layout, k: int, epsilon_counts: float) -> int:
    """K' ≤ K with k·R·K'/ε_p ≤ 2^48 (a public function of θ* and ε_p).

    ``check`` has made sure that even k = d leaves K' ≥ 1, before the data is read.
    """
    limit = MAX_GRID_NOISE * epsilon_counts / (k * layout.cell_max)
    return min(layout.weight_grid, 2 ** max(0, int(math.floor(math.log2(limit)))))


def normalized_counts(layout: Layout, k: int, grid: int) -> np.ndarray:
    """C_j(k) in units of 1/(grid·V), original column order (exact integers, at most K·c_j)."""
    integer = layout.integer_type()
    rows = int(layout.long_count(k))
    where = layout.long_positions[layout.cell_range(0, rows)]
    removed = np.zeros(layout.n_items, dtype=np.int64)
    blockwise_at(np.add, removed, where, layout.cell_values(0, rows))
    units = np.zeros(layout.n_items, dtype=integer)
    blockwise_at(np.add, units, where, layout.cell_weights(0, rows, grid))
    counts = np.empty(layout.n_items, dtype=integer)
    counts[layout.column_order] = (grid * (layout.totals_by_position - removed).astype(integer)
                                   + k * layout.cell_max * units)
    return counts


# --- diagnostics: expected error against θ (DPSense Fig. 1) --------------------------------

def expected_abs_error(kept: np.ndarray, truth: np.ndarray, scale: float, alpha: float = 1.0) -> np.ndarray:
    """E|α·max(0, kept + L) − truth| per column for L ~ Laplace(scale).

    With Y = kept + L and t = truth/α ≥ 0: E|max(0, Y) − t| = E|Y − t| − E[max(0, −Y)]
    = |kept − t| + b·e^{−|kept − t|/b} − (b/2)·e^{−kept/b} for kept ≥ 0.
    """
    gap = np.abs(kept - truth / alpha)
    return alpha * (gap + scale * np.exp(-gap / scale) - 0.5 * scale * np.exp(-np.maximum(kept, 0) / scale))


def theta_grid(top: int, n_items: int, points: int = 28) -> np.ndarray:
    """Levels k for the error curve: every k up to 8, then geometric up to k_H and on to d."""
    low = np.arange(1, min(8, n_items) + 1)
    middle = np.geomspace(min(8, top), top, points) if top > 8 else np.zeros(0)
    high = np.geomspace(max(1, top), n_items, 12)
    return np.unique(np.concatenate([low, np.round(middle), np.round(high)]).astype(np.int64))


def true_sums(data, layout: Layout) -> np.ndarray:
    """The true answer (column sums of the uncapped values); for yes/no data the layout has it."""
    return layout.column_totals if layout.long_cells is None else data.column_sums  # None: every cell is 1


def error_curve(layout: Layout, truth: np.ndarray, epsilon_counts: float, alphas, levels: np.ndarray,
                cancel: CancelToken | None) -> np.ndarray:
    """Expected MAE of releasing at each level k (with α = alphas[k − 1]), from the true data."""
    scale_unit = layout.cell_max / layout.value_grid / epsilon_counts
    per_kg = float(layout.weight_grid * layout.value_grid)
    truth_positions = np.asarray(truth, dtype=np.float64)[layout.column_order]
    totals = layout.totals_by_position
    exact = totals / float(layout.value_grid)
    curve = np.empty(levels.size, dtype=np.float64)
    top = layout.top_level
    descending = levels[::-1]
    low = descending[descending < top]
    for k, m, removed, units in _sweep(layout, low, cancel, layout.integer_type()):
        kept = exact.copy()
        kept[:m] = ((totals[:m] - removed[:m]) / float(layout.value_grid)
                    + np.asarray(units[:m], dtype=np.float64) * (k * layout.cell_max / per_kg))
        at = np.searchsorted(levels, k)
        curve[at] = expected_abs_error(kept, truth_positions, k * scale_unit, float(alphas[k - 1])).mean()
    for at in np.flatnonzero(levels >= top):
        k = int(levels[at])
        curve[at] = expected_abs_error(exact, truth_positions, k * scale_unit, float(alphas[k - 1])).mean()
    return curve


# --- the mechanisms ---------------------------------------------------------------------------

def _cached(data, key, build):
    with _TABLES_LOCK:
        cache = _TABLES.setdefault(data, {})
        if key in cache:
            return cache[key]
    value = build()
    with _TABLES_LOCK:
        cache = _TABLES.setdefault(data, {})
        if len(cache) >= _TABLES_PER_DATASET:
            cache.pop(next(iter(cache)))
        cache[key] = value
    return value


@dataclass
class Prepared:
    """Scores for one dataset and ε split, and a small cache of normalized counts."""

    layout: Layout
    epsilon_select: float
    epsilon_counts: float
    sensitivity: float
    sampler: exponential.Sampler  # over the flattened candidate scores
    thetas: np.ndarray  # θ for k = 1..d
    alphas: np.ndarray  # the α candidates ([1.0] for DPSense)
    diagnostics: dict
    _counts: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def counts(self, k: int, grid: int) -> np.ndarray:
        with self._lock:
            if (k, grid) in self._counts:
                return self._counts[(k, grid)]
        counts = normalized_counts(self.layout, k, grid)
        with self._lock:
            if len(self._counts) >= 8:
                self._counts.pop(next(iter(self._counts)))
            self._counts[(k, grid)] = counts
        return counts


class _SensitivityControl(Mechanism):
    """What DPSense and DPSense-S share: budget split, layout, release."""

    family = FAMILY
    purpose = NO_BOUND
    paper = PAPER
    scales_counts = False
    #: why a declared Δ is not needed (the CLI and the API say so when one is given)
    without_bound = "it scales each person's row down to a threshold θ it chooses privately, with a share of ε"

    def check(self, data, epsilon, params):
        """Decided from d, ε and the declared r only: works on a domain without data."""
        if data is None:
            return params
        _, cell_max = value_grid(declared_max_value(params))
        epsilon_counts = epsilon * (1 - params["selection_share"])
        if MAX_GRID_NOISE * epsilon_counts / (data.n_items * cell_max) < 1:
            raise ParameterError(f"ε = {epsilon:g} is too small for {data.n_items:,} items: the largest threshold "
                                 "would need more noise than can be sampled. Use a larger ε.")
        return params

    def split(self, epsilon: float, params: dict) -> tuple[float, float]:
        select = epsilon * params["selection_share"]
        return select, epsilon - select

    def quality_sensitivity(self, layout: Layout) -> float:
        """Δq = R/V (≤ r; 1 for binary data), module notes."""
        return layout.cell_max / layout.value_grid

    def layout(self, data, params) -> Layout:
        r = declared_max_value(params)
        return _cached(data, ("layout", r), lambda: integer_layout(data, r))

    def run(self, data, prepared: Prepared, epsilon, params, source):
        layout = prepared.layout
        choice = prepared.sampler.draw(source)
        index, alpha_index = divmod(choice, prepared.alphas.size)
        k = index + 1
        theta = float(prepared.thetas[index])
        alpha = float(prepared.alphas[alpha_index])
        grid = release_grid(layout, k, prepared.epsilon_counts)
        counts = prepared.counts(k, grid)
        noise_units = k * layout.cell_max * grid / prepared.epsilon_counts
        noisy = counts + discrete_laplace(source, noise_units, counts.size)
        values = np.maximum(noisy, 0).astype(np.float64) / float(grid * layout.value_grid)
        if self.scales_counts:
            values *= alpha
        noise_scale = theta / prepared.epsilon_counts
        budget = BudgetSplit(float(epsilon))
        budget.add("choose θ" + (" and α" if self.scales_counts else ""), prepared.epsilon_select,
                   f"exponential mechanism ({self.form_text(params)}) over {prepared.sampler.n:,} candidates, "
                   f"quality sensitivity {prepared.sensitivity:g}")
        budget.add("noisy counts", prepared.epsilon_counts,
                   f"rows normalized to θ* = {theta:g}; Laplace noise of scale θ*/ε_p = {noise_scale:.6g} "
                   "(exact, on a power-of-two grid)")
        # the curves are shared by every release of this preparation; each release marks its own choice
        diagnostics = {name: dataclasses.replace(plot, data={**plot.data, "chosen_theta": theta})
                       for name, plot in prepared.diagnostics.items()}
        chosen = {"theta": theta}
        if self.scales_counts:
            chosen["alpha"] = alpha
        diagnostics["chosen"] = Diagnostic(
            title="Chosen threshold" + (" and scaling factor" if self.scales_counts else ""),
            caption="The threshold θ*" + (" and factor α*" if self.scales_counts else "")
                    + " picked privately by the exponential mechanism for this release. Publishing them costs "
                      "nothing extra: they were paid for with ε_c.",
            data=chosen, internal=False)
        internal = {"rows_normalized": layout.people_normalized(k), "theta_index": int(index)}
        if params.get("max_value") is None and not data.binary:
            internal["values_counted_as_one"] = ("the data holds values other than 1; without a declared r "
                                                 "every non-zero cell was counted as 1")
        margin = discrete_laplace_margin(noise_units, grid * layout.value_grid) * (alpha if self.scales_counts else 1.0)
        release = self.new_release(data, epsilon, params, budget, source, values=values, diagnostics=diagnostics,
                                   internal=internal, noise_margin=margin, margin_withheld=NO_MARGIN)
        release.report["selection"] = {
            "form": self.form_text(params), "quality_sensitivity": prepared.sensitivity,
            "candidates": prepared.sampler.n, "theta": theta, **({"alpha": alpha} if self.scales_counts else {})}
        release.report["noise_scales"] = {"theta_over_epsilon_counts": noise_scale, "grid": 1.0 / (grid * layout.value_grid)}
        expected = counts_error(noise_scale * (alpha if self.scales_counts else 1.0), data.n_items, clamped=True,
                                discrete=False)
        expected["text"] += (" On top of that, normalizing people with more than θ* items lowers the counts "
                             "by an amount that depends on the data" + (", which the factor α* partly corrects."
                                                                       if self.scales_counts else "."))
        release.report["expected_error"] = expected
        return release

    def form_text(self, params) -> str:
        if params.get("selection_form") == "one-directional":
            return "one-directional: Pr ∝ exp(ε_c·q/Δq), valid because every score moves the same way (§4.1)"
        return "standard: Pr ∝ exp(ε_c·q/(2·Δq))"

    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        facts["bound Δ"] = ("not needed and not used: each person's row is normalized to the privately chosen "
                            "threshold θ, so only the number of items d is public (DPSense §4.2)")
        r = declared_max_value(params)
        if r is None:
            facts["cell values"] = "no maximum value r declared: every non-zero cell counts as 1 (yes/no view)"
        else:
            facts["declared maximum cell value r"] = r
            grid, cell_max = value_grid(r)
            facts["threshold step"] = cell_max / grid
        return facts

    def report_notes(self, params):
        yield ("Negative noisy counts are set to 0 (post-processing: it costs no privacy and never moves a "
               "count away from the truth).")
        yield ("Row weights min(1, θ/row total) are rounded down to a power-of-two grid, so the noisy counts are "
               "exact integers on that grid before the final division (no floating-point leak); the rounding only "
               "lowers each row's sum, so the sensitivity stays θ.")
        if self.scales_counts:
            yield "The clamped counts are multiplied by α* (post-processing)."

    def _prepared(self, layout: Layout, epsilon: float, params: dict, scores: np.ndarray, alphas: np.ndarray,
                  diagnostics: dict) -> Prepared:
        select, counts = self.split(epsilon, params)
        flat = np.ascontiguousarray(scores).ravel()
        sensitivity = self.quality_sensitivity(layout)
        form = params.get("selection_form", "standard")
        error = score_error(layout.cell_max, layout.value_grid, layout.n_items, counts)
        sampler = exponential.Sampler(flat, epsilon=select, sensitivity=sensitivity,
                                      monotone=form == "one-directional", score_error=error)
        return Prepared(layout, select, counts, sensitivity, sampler, layout.thetas(), alphas, diagnostics)


def _theta_label(layout: Layout) -> str:
    if layout.value_grid == 1 and layout.cell_max == 1:
        return "threshold θ (items per person)"
    return "threshold θ (total value per person)"


@register
class DPSense(_SensitivityControl):
    id = "dpsense"
    name = "DPSense — private sensitivity control"
    reference = "DPSense §4.1–4.2, Alg. 1, Lemma 1"
    summary = ("Chooses a threshold θ privately, scales each person's row down to at most θ items, and adds "
               "noise of scale θ/ε: no bound Δ is needed.")
    order = 40
    params = (SELECTION_SHARE, SELECTION_FORM, MAX_VALUE)

    def prepare_key(self, epsilon, params):
        return (epsilon, params["selection_share"], params["selection_form"], params["max_value"])

    def prepare(self, data, epsilon, params, progress, cancel):
        layout = self.layout(data, params)
        select, counts = self.split(epsilon, params)
        kept = _cached(data, ("kept", layout.value_grid, layout.cell_max), lambda: average_kept(layout))
        thetas = layout.thetas()
        quality = kept - thetas / counts
        levels = theta_grid(layout.top_level, data.n_items)
        curve = error_curve(layout, true_sums(data, layout), counts, np.ones(data.n_items), levels, cancel)
        monotone = params["selection_form"] == "one-directional"
        probability = exponential.probabilities(quality, select, self.quality_sensitivity(layout), monotone)
        label = _theta_label(layout)
        diagnostics = {
            "quality": Diagnostic(
                title="Quality of each threshold θ (internal)",
                caption="The score q(θ) = average kept count − θ/ε_p the mechanism uses to choose θ (DPSense "
                        "Fig. 1): high where little is cut off and little noise is needed; the exponential mechanism "
                        "favours high scores. Computed from the true data: for your eyes only.",
                data={"theta": thetas, "quality": quality, "average_kept": kept, "selection_probability": probability},
                internal=True, x=label, y="quality q(θ)"),
            "expected_mae": Diagnostic(
                title="Expected error at each threshold θ (internal)",
                caption="The mean absolute error to expect if the counts were released at this θ (cut-off plus "
                        "noise, negatives set to 0), as in DPSense Fig. 1. It mirrors the quality curve: the best θ "
                        "for one is close to the best for the other. Computed from the true data: for your eyes "
                        "only, and do not pick θ from it (that choice would leak).",
                data={"theta": thetas[levels - 1], "expected_mae": curve},
                internal=True, x=label, y="expected mean absolute error"),
        }
        return self._prepared(layout, epsilon, params, quality, np.ones(1), diagnostics)


@register
class DPSenseS(_SensitivityControl):
    id = "dpsense-s"
    name = "DPSense-S — sensitivity control with scaling"
    reference = "DPSense §4.3, Alg. 2, Lemma 2"
    summary = ("Like DPSense, and also chooses a factor α between 1 and 2 that scales the counts up to undo "
               "the under-estimate from normalizing long rows.")
    order = 41
    scales_counts = True
    params = (SCALED_SELECTION_SHARE, ALPHA_STEPS, MAX_VALUE)

    def prepare_key(self, epsilon, params):
        return (epsilon, params["selection_share"], params["alpha_steps"], params["max_value"])

    def prepare(self, data, epsilon, params, progress, cancel):
        steps = params["alpha_steps"]
        layout = self.layout(data, params)
        select, counts = self.split(epsilon, params)
        tables = _cached(data, ("scaled", layout.value_grid, layout.cell_max, steps),
                         lambda: scaled_error_table(layout, steps, scaled_progress(progress, 0.0, 0.9), cancel))
        thetas = layout.thetas()
        alphas = np.arange(steps, 2 * steps + 1) / steps
        scores = -tables.average_error - (alphas[None, :] * thetas[:, None]) / counts
        best = np.argmax(scores, axis=1)
        best_quality = scores[np.arange(scores.shape[0]), best]
        best_alpha = alphas[best]
        levels = theta_grid(layout.top_level, data.n_items)
        curve = error_curve(layout, true_sums(data, layout), counts, best_alpha, levels, cancel)
        probability = exponential.probabilities(scores.ravel(), select, self.quality_sensitivity(layout))
        label = _theta_label(layout)
        diagnostics = {
            "quality": Diagnostic(
                title="Quality of each threshold θ with its best scaling factor α (internal)",
                caption="For every θ, the best score q_s(θ, α) = −average error after scaling by α − α·θ/ε_p "
                        "over α, the α that reaches it, and the score without scaling (α = 1). Computed from the "
                        "true data: for your eyes only.",
                data={"theta": thetas, "quality": best_quality, "best_alpha": best_alpha,
                      "quality_unscaled": scores[:, 0],
                      "selection_probability": probability.reshape(scores.shape).sum(axis=1)},
                internal=True, x=label, y="quality q_s(θ, α)"),
            "expected_mae": Diagnostic(
                title="Expected error at each threshold θ with its best α (internal)",
                caption="The mean absolute error to expect if the counts were released at this θ and scaled by the "
                        "α with the best score for it. Computed from the true data: for your eyes only, and do not "
                        "pick θ or α from it (that choice would leak).",
                data={"theta": thetas[levels - 1], "expected_mae": curve, "alpha": best_alpha[levels - 1]},
                internal=True, x=label, y="expected mean absolute error"),
        }
        progress(1.0, "Ready")
        return self._prepared(layout, epsilon, params, scores, alphas, diagnostics)
