"""FPA (Rastogi & Nath, SIGMOD 2010, as adapted in GS §2.2 and Appendix A).

The count vector c (after truncation to the declared Δ; Δ' = min(Δ, d)) is treated as a
signal over the items in their listed order. FPA keeps its first ρ discrete Fourier
coefficients F_k = Σ_n c_n e^{−2πikn/d}, k = 0..ρ−1, adds noise to them and inverts.

What is released, exactly
-------------------------
c is real, so F_{d−k} is the complex conjugate of F_k: the coefficients 0..⌊d/2⌋ (numpy's
``rfft``) carry everything, and ρ may be 1..⌊d/2⌋+1. The released numbers are the real
parts and imaginary parts of F_0..F_{ρ−1} as separate real coordinates — except that
F_0 (= Σ c) has no imaginary part, and neither has F_{d/2} (d even, kept only when
ρ = d/2 + 1). Write R for the number of kept real-only coefficients (1 or 2) and
K = ρ − R for the complex ones: 2K + R real coordinates. The published counts are the
inverse transform with the conjugate halves implied and the rest set to 0 (``irfft``) —
post-processing.

Sensitivity of the kept coordinates (derived here; the audit checks it)
----------------------------------------------------------------------
Neighbours differ by one person: δ = c(D) − c(D′) has entries in {0, +1} (or {0, −1})
on a set S of at most Δ' items. ΔF_k = Σ_{n∈S} δ_n e^{−2πikn/d}.

(a) Triangle inequality, coefficient by coefficient. For a real-only coefficient
    |ΔF_k| ≤ |S| ≤ Δ'. For a complex one, |Re ΔF_k| + |Im ΔF_k| ≤ Σ_{n∈S}(|cos θ| + |sin θ|)
    ≤ √2·|S| ≤ √2·Δ'. In all: T = Δ'·(R + √2·K).

(b) Parseval over the whole spectrum: Σ_{k=0}^{d−1} |ΔF_k|² = d·Σ_n δ_n² = d·|S| ≤ d·Δ'.
    Each kept complex coefficient appears twice in it (k and d − k), each real-only one
    once. With a_r the real-only changes and s = Σ_complex |ΔF_k|²:
    Σ a_r² + 2s ≤ dΔ'. By Cauchy–Schwarz, the complex part of the L1 is at most
    √(2K)·√s ≤ √K·√(dΔ' − Σ a_r²), and a second Cauchy–Schwarz over the vector
    (a_1, …, a_R, √(dΔ' − Σ a_r²)) gives L1 ≤ √(R + K)·√(dΔ') = √(ρ·d·Δ'). So P = √(ρdΔ').

Both bounds hold; we use S = min(T, P). T ≈ √2·ρΔ' and P = √(ρdΔ'), so (a) is the smaller
one when 2ρΔ' < d (the usual ρ ≪ d) and (b) when many coefficients are kept of few items.
(a) is attained: with d = 8, ρ = 2 and Δ' = 1, a person holding item 1 changes F_0 by 1
and F_1 by e^{−iπ/4}, an L1 change of exactly 1 + √2 = T (the audit uses that case).

The paper. Theorem 2 states λ = √(ρ·d·Δ)/ε; Appendix A's steps (Parseval, then
L1 ≤ √ρ·L2 over the ρ complex coefficients, and Δ₂(Q) = √Δ) also give √(ρdΔ), but its
last line writes √(ρd)·Δ — larger by √Δ: valid, but wasteful. The steps themselves treat
each complex coefficient's modulus as one coordinate; Laplace noise on real and imaginary
parts separately needs |Re| + |Im| ≤ √2·|·|, which costs a factor √2 — exactly what the
conjugate symmetry gives back in (b). So Theorem 2's formula is right for this release
and agrees with (b); the appendix's final formula is √Δ too large; (a) is smaller than
both whenever 2ρΔ' < d (roughly), which is the common case.

Noise on a grid (docs/ARCHITECTURE.md §3)
---------------------------
The coordinates are real, so they are rounded to a power-of-two grid γ and get
γ·DiscreteLaplace(b/γ) (as ``grid_laplace`` does; here in exact integers). Rounding can move each of the 2K + R
coordinates by up to γ more between neighbours, so the release uses sensitivity
S + (2K + R)·γ and scale b = (S + (2K + R)·γ)/ε (``grid_scale``): exactly ε-DP for the
computed coefficients.

Exact arithmetic in the transform. A floating-point FFT of the true counts carries a
rounding error that depends on the data, so the computed coefficients of neighbours could
differ by slightly more than the sensitivity. The release therefore never uses it: the
kept coefficients are computed *exactly* as integer sums Σ_n c_n·C_kn with public
dyadic weights C_kn = round(2²⁴·cos(2πkn/d))/2²⁴ (and likewise −sin). That is a fixed,
public linear query, evaluated without any rounding. Each weight is within
2⁻²⁵ + 2⁻⁴⁵ of the true cosine or sine (the rounding, plus the float cosine's own error),
so for a person's change set S the kept coordinates change by at most the exact DFT's
amount plus (2K + R)·|S|·(2⁻²⁵ + 2⁻⁴⁵): the release uses
S' = min(T, P) + (2K + R)·Δ'·(2⁻²⁵ + 2⁻⁴⁵) — about 10⁻⁷ of S.

The same path is taken for every dataset (issue #13, B1: an earlier version fell back to
the FFT above 2²⁹ counted cells and said so in the report — a published fact that one
person could flip). How the sums are evaluated depends on the data only in ways that
cannot change a single bit of the result:

* the weights are integers below 2²⁴ in magnitude; when the total Σ c_n is below 2²⁹
  every partial sum of c_n·C_kn is an integer below 2⁵³, so float64 matrix products
  (BLAS, any summation order) are exact;
* otherwise the counts are split into 16-bit limbs: blocks of 2¹³ items keep each
  block's sum below 2⁵³ (exact in float64), the block sums are added as int64 (or as
  Python integers when they could reach 2⁶², from 2²² items on) and the limbs are
  recombined as Python integers — no size of data can overflow;
* the exact coordinates x (in units of 2⁻²⁴) are rounded to the noise grid γ = 2^g in
  integer arithmetic, round(x·2⁻²⁴/γ), and the discrete Laplace noise is added to those
  integers; only the noisy result is converted to float (post-processing).

Cost: ρ·d weight look-ups and products, in cache-sized blocks (some 5·10⁷ per
second on one core). ``check`` refuses, from the declared ρ and d alone, settings above
``MAX_PRODUCTS`` (minutes of work for a release whose noise grows with ρ anyway).

Error to expect (public): the noise on each published count has variance
2b²(R + 4K)/d² (each complex coefficient enters twice through its conjugate); on top of
it comes the reconstruction error of dropping the other coefficients, which depends on
the data (the internal diagnostic plots it for every ρ via Parseval).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..privacy.bounding import bounded_counts, prepare_bound
from ..privacy.budget import BudgetSplit
from ..privacy.noise import discrete_laplace, grid_scale
from . import register
from .base import BOUND, SHARED_NOISE, Diagnostic, Mechanism, Param
from .counts import CLAMP
from .gs import DIAGNOSTICS, plot_sizes

FAMILY = "Grouping and smoothing (Kellaris & Papadopoulos)"
PAPER = ("Rastogi & Nath (SIGMOD 2010), as adapted in Kellaris & Papadopoulos, Practical Differential "
         "Privacy via Grouping and Smoothing (VLDB 2013)")
PLOT_POINTS = 2000  # the most points a curve hands to the GUI
MAE_POINTS = 24  # values of ρ at which the diagnostic computes the mean absolute error
ORACLE_CANDIDATES = 64  # values of ρ the non-private oracle tries


def kept_slots(d: int, rho):
    """(R, K): kept real-only coefficients (F_0, and F_{d/2} when kept) and complex ones.

    ``rho`` may be a number or an array of them.
    """
    if np.any(np.asarray(rho) < 1) or np.any(np.asarray(rho) > d // 2 + 1):
        raise ValueError(f"ρ = {rho} outside 1..{d // 2 + 1}")
    real_only = 1 + (np.asarray(rho) - 1 == d // 2) * (d > 1 and d % 2 == 0)
    if np.ndim(rho) == 0:
        real_only = int(real_only)
    return real_only, rho - real_only


def fpa_sensitivity(d: int, rho, bound: int):
    """L1 sensitivity of the kept real and imaginary parts: min(T, P) of the module notes.

    ``rho`` may be a number or an array of them.
    """
    bound = max(1, min(int(bound), int(d)))
    real_only, complex_count = kept_slots(d, rho)
    triangle = bound * (real_only + math.sqrt(2.0) * complex_count)
    parseval = np.sqrt(np.multiply(rho, d * bound, dtype=np.float64))
    sensitivity = np.minimum(triangle, parseval)
    return float(sensitivity) if np.ndim(rho) == 0 else sensitivity


WEIGHT_BITS = 24  # public dyadic weights of the exact transform
WEIGHT_ERROR = 2.0 ** -(WEIGHT_BITS + 1) + 2.0**-45  # |C_kn − cos|: the rounding, plus the float cosine's error
MAX_PRODUCTS = 3 * 10**9  # most ρ·d products a release computes (about a minute; refused in check)
SINGLE_PASS_TOTAL = 2**29  # below: every partial sum of c_n·C_kn stays under 2^53, exact in float64
LIMB_BITS = 16  # above: counts split into 16-bit limbs
WIDE_SUM = 2**62  # limb sums that could reach this are added as Python integers (d ≥ 2^22 items)
_ITEM_BLOCK = 1 << 13  # 2^13 products below 2^40 each: every block sum stays under 2^53
_BLOCK_CELLS = 1 << 17  # weights per block: three 1 MiB arrays, which stay in cache (3x faster than 16 MiB)


def weight_margin(d: int, rho: int, bound: int) -> float:
    """Extra sensitivity of the dyadic weights: (2K + R)·Δ'·(2⁻²⁵ + 2⁻⁴⁵) (module notes)."""
    real_only, complex_count = kept_slots(d, rho)
    return (real_only + 2 * complex_count) * max(1, min(int(bound), int(d))) * WEIGHT_ERROR


def weight_tables(d: int) -> tuple[np.ndarray, np.ndarray]:
    """round(2²⁴·cos(2πr/d)) and round(−2²⁴·sin(2πr/d)), r = 0..d−1: public exact integers (float64)."""
    angle = (2.0 * math.pi / d) * np.arange(d, dtype=np.float64)
    scale = float(2**WEIGHT_BITS)
    return np.round(np.cos(angle) * scale), np.round(-np.sin(angle) * scale)


def exact_coefficients(counts: np.ndarray, rho: int) -> tuple[np.ndarray, np.ndarray]:
    """Real and imaginary parts of F_0..F_{ρ−1} with the public dyadic weights, as exact Python
    integers in units of 2⁻²⁴ (``object`` arrays). The same values for every path (module notes)."""
    d = counts.size
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total < SINGLE_PASS_TOTAL:
        columns = counts.astype(np.float64)[:, None]
        shifts = [0]
        accumulate = np.float64  # every partial sum is an integer below 2^53
    else:
        limbs = max(1, -(-int(counts.max()).bit_length() // LIMB_BITS))
        shifts = [LIMB_BITS * j for j in range(limbs)]
        mask = (1 << LIMB_BITS) - 1
        columns = np.column_stack([(counts >> shift) & mask for shift in shifts]).astype(np.float64)
        # each limb's sum is at most 2^24·min(total, d·(2^16 − 1)): int64 unless that could reach 2^62
        accumulate = object if 2**WEIGHT_BITS * min(total, d * mask) >= WIDE_SUM else np.int64
    cos_table, sin_table = weight_tables(d)
    real = np.zeros((rho, len(shifts)), dtype=accumulate)
    imaginary = np.zeros((rho, len(shifts)), dtype=accumulate)
    items = min(_ITEM_BLOCK, d)
    rows = max(1, _BLOCK_CELLS // items)
    modulus = np.uint64(d)
    for first in range(0, rho, rows):
        k = np.arange(first, min(rho, first + rows), dtype=np.uint64)[:, None]
        for start in range(0, d, items):
            n = np.arange(start, min(d, start + items), dtype=np.uint64)
            index = (k * n[None, :]) % modulus  # kn mod d, exact (kn < d² < 2^64)
            block = columns[start:start + n.size]
            real_part = cos_table[index] @ block  # exact: integer partial sums below 2^53
            imaginary_part = sin_table[index] @ block
            if accumulate is np.float64:
                real[first:first + k.size] += real_part
                imaginary[first:first + k.size] += imaginary_part
            else:
                real[first:first + k.size] += real_part.astype(np.int64).astype(accumulate)
                imaginary[first:first + k.size] += imaginary_part.astype(np.int64).astype(accumulate)

    def combine(parts: np.ndarray) -> np.ndarray:
        exact = np.zeros(rho, dtype=object)
        for j, shift in enumerate(shifts):
            exact += parts[:, j].astype(np.int64 if accumulate is np.float64 else accumulate).astype(object) << shift
        return exact

    return combine(real), combine(imaginary)


def grid_units(exact: np.ndarray, gamma: float) -> np.ndarray:
    """round(x·2⁻²⁴/γ) for exact integers x (units of 2⁻²⁴) and a power of two γ, halves up;
    in integer arithmetic, so the rounding moves each coordinate by at most γ/2."""
    mantissa, exponent = math.frexp(gamma)
    if mantissa != 0.5:
        raise ValueError(f"the grid width {gamma!r} is not a power of two")
    shift = WEIGHT_BITS + exponent - 1  # x·2⁻²⁴/2^g = x / 2^shift
    if shift <= 0:
        return np.array([int(x) << -shift for x in exact], dtype=object)
    half = 1 << (shift - 1)
    return np.array([(int(x) + half) >> shift for x in exact], dtype=object)


def pack(coefficients: np.ndarray, d: int) -> np.ndarray:
    """The real coordinates that are released: Re F_0, (Re F_k, Im F_k)…, and Re F_{d/2} if kept."""
    return pack_parts(coefficients.real, coefficients.imag, d)


def pack_parts(real: np.ndarray, imaginary: np.ndarray, d: int) -> np.ndarray:
    """:func:`pack` from the real and imaginary parts (any dtype, e.g. exact Python integers)."""
    rho = real.size
    real_only, complex_count = kept_slots(d, rho)
    middle = slice(1, 1 + complex_count)
    parts = [real[:1], np.column_stack([real[middle], imaginary[middle]]).ravel()]
    if real_only == 2:
        parts.append(real[-1:])
    return np.concatenate(parts)


def unpack(coordinates: np.ndarray, d: int, rho: int) -> np.ndarray:
    """Inverse of :func:`pack`: the ρ complex coefficients (imaginary parts of real-only ones 0)."""
    real_only, complex_count = kept_slots(d, rho)
    out = np.zeros(rho, dtype=np.complex128)
    out[0] = coordinates[0]
    pairs = coordinates[1:1 + 2 * complex_count].reshape(complex_count, 2)
    out[1:1 + complex_count] = pairs[:, 0] + 1j * pairs[:, 1]
    if real_only == 2:
        out[-1] = coordinates[-1]
    return out


def reconstruct(coefficients: np.ndarray, d: int) -> np.ndarray:
    """Counts from the first ρ coefficients, the others 0 (post-processing)."""
    spectrum = np.zeros(d // 2 + 1, dtype=np.complex128)
    spectrum[:coefficients.size] = coefficients
    return np.fft.irfft(spectrum, n=d)


LAPLACE_95_PER_SD = math.log(20) / math.sqrt(2)  # a Laplace variable's 95% half-width in standard deviations


def noise_rms(d: int, rho, scale):
    """Root mean square of the noise on each published count: b·√(2(R + 4K))/d (arrays too)."""
    real_only, complex_count = kept_slots(d, rho)
    return scale * np.sqrt(2.0 * (real_only + 4 * complex_count)) / d


def error_curve(counts: np.ndarray, bound: int, epsilon: float) -> dict:
    """For every ρ: reconstruction RMS error (true data, via Parseval) and noise RMS (public)."""
    d = counts.size
    spectrum = np.fft.rfft(counts.astype(np.float64))
    weight = np.full(spectrum.size, 2.0)
    weight[0] = 1.0
    if d % 2 == 0 and d > 1:
        weight[-1] = 1.0  # F_{d/2} appears once in the full spectrum
    energy = weight * np.abs(spectrum) ** 2
    total = float(np.sum(counts.astype(np.float64) ** 2)) * d  # Parseval: Σ_k |F_k|² = d·Σ c²
    dropped = np.maximum(total - np.cumsum(energy), 0.0)
    rhos = np.arange(1, spectrum.size + 1)
    reconstruction = np.sqrt(dropped) / d  # RMS over the d counts: Σ_n error² = dropped/d
    noise = noise_rms(d, rhos, fpa_sensitivity(d, rhos, bound) / epsilon)  # the grid's share is negligible
    return {"rho": rhos, "reconstruction_rmse": reconstruction, "noise_rmse": noise,
            "total_rmse": np.sqrt(reconstruction ** 2 + noise ** 2)}


def mae_curve(counts: np.ndarray, rhos: np.ndarray, bound: int, epsilon: float) -> dict:
    """At the given ρ: mean absolute reconstruction error and expected total MAE (true data).

    The expected total treats the noise on a count as normal with the public RMS (a sum of
    many Laplace terms): E|e + N| = σ·√(2/π)·e^{−e²/2σ²} + |e|·erf(|e|/(σ√2)).
    """
    from scipy.special import erf

    d = counts.size
    truth = counts.astype(np.float64)
    spectrum = np.fft.rfft(truth)
    reconstruction, total = np.empty(rhos.size), np.empty(rhos.size)
    for k, rho in enumerate(rhos):
        error = np.abs(reconstruct(spectrum[:rho], d) - truth)
        sigma = noise_rms(d, int(rho), fpa_sensitivity(d, int(rho), bound) / epsilon)
        reconstruction[k] = error.mean()
        total[k] = np.mean(sigma * math.sqrt(2 / math.pi) * np.exp(-0.5 * (error / sigma) ** 2)
                           + error * erf(error / (sigma * math.sqrt(2))))
    return {"rho": rhos, "reconstruction_mae": reconstruction, "expected_mae": total}


class _Fourier(Mechanism):
    family = FAMILY
    purpose = SHARED_NOISE  # noise on a few Fourier coefficients, spread over all counts: smoothing
    paper = PAPER
    reference = "GS §2.2, Theorem 2, Appendix A"
    transform_text = "exact integer sums with public dyadic weights (the same for every dataset)"

    def prepare_key(self, epsilon, params):
        return (params["bound"],)

    def prepare(self, data, epsilon, params, progress, cancel):
        return prepare_bound(data, params["bound"])

    def choose_rho(self, counts, epsilon, params, d) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def sensitivity(self, d: int, rho: int, bound: int) -> float:
        return fpa_sensitivity(d, rho, bound)

    def noise_scale(self, d: int, rho: int, bound: int, epsilon: float) -> tuple[float, float, float]:
        """(sensitivity, grid width γ, noise scale b) for ρ kept coefficients, from declared values (module notes)."""
        sensitivity = self.sensitivity(d, rho, bound) + weight_margin(d, rho, bound)
        real_only, complex_count = kept_slots(d, rho)
        gamma, scale = grid_scale(sensitivity, epsilon, real_only + 2 * complex_count)
        return sensitivity, gamma, scale

    def kept_coordinates(self, counts: np.ndarray, rho: int) -> np.ndarray:
        """The released coordinates before noise, exact integers in units of 2⁻²⁴ (module notes)."""
        return pack_parts(*exact_coefficients(counts, rho), counts.size)

    def run(self, data, prepared, epsilon, params, source):
        d = data.n_items
        counts = bounded_counts(data, prepared, source)
        rho = self.choose_rho(counts, epsilon, params, d)
        sensitivity, gamma, scale = self.noise_scale(d, rho, params["bound"], epsilon)
        real_only, complex_count = kept_slots(d, rho)
        units = grid_units(self.kept_coordinates(counts, rho), gamma)
        noisy = units + discrete_laplace(source, scale / gamma, units.size)
        values = reconstruct(unpack(np.asarray(noisy, dtype=np.float64) * gamma, d, rho), d)
        if params["clamp"]:
            values = np.maximum(values, 0.0)
        budget = BudgetSplit.single(
            epsilon, "noisy Fourier coefficients",
            f"{rho} coefficients ({real_only + 2 * complex_count} real numbers), L1 sensitivity {sensitivity:.6g}; "
            f"noise of scale {scale:.6g} on a grid of width {gamma:.3g}")
        internal = {"rows_truncated": prepared.rows_cut, "kept_coefficients": rho}
        diagnostics = {}
        if params["diagnostics"]:
            diagnostics["reconstruction"] = self.reconstruction_diagnostic(counts, rho, params["bound"], epsilon)
            spectrum = np.fft.rfft(counts.astype(np.float64))
            internal["reconstruction_mae"] = float(np.abs(reconstruct(spectrum[:rho], d) - counts).mean())
        release = self.new_release(data, epsilon, params, budget, source, values=values, diagnostics=diagnostics,
                                   internal=internal, noise_margin=LAPLACE_95_PER_SD * float(noise_rms(d, rho, scale)),
                                   margin_withheld=self.no_margin)
        release.report["noise"] = {"kept_coefficients": rho, "sensitivity": sensitivity, "grid": gamma,
                                   "scale": scale, "transform": self.transform_text}
        return release

    @staticmethod
    def reconstruction_diagnostic(counts, rho, bound, epsilon) -> Diagnostic:
        """Reconstruction and noise error against ρ (internal: reads the true counts)."""
        curve = error_curve(counts, bound, epsilon)
        shown = plot_sizes(curve["rho"].size, PLOT_POINTS, (rho,)) - 1
        sampled = plot_sizes(curve["rho"].size, MAE_POINTS, (rho,))
        absolute = mae_curve(counts, sampled, bound, epsilon)
        best = int(sampled[np.argmin(absolute["expected_mae"])])
        return Diagnostic(
            title="Error for each number of kept Fourier coefficients ρ (internal)",
            caption=("FPA keeps only the first ρ Fourier coefficients of the counts. Keeping few blurs the counts "
                     "(reconstruction error, from the true data); keeping many needs more noise (noise error, from "
                     f"public figures only). This release kept {rho}; of the values tried, the lowest expected "
                     f"average error on this data is at ρ = {best}. Computed from the true data: for your eyes "
                     "only — choosing ρ from this plot would leak."),
            data={key: value[shown] for key, value in curve.items()}
            | {"rho_sampled": absolute["rho"], "reconstruction_mae": absolute["reconstruction_mae"],
               "expected_mae": absolute["expected_mae"], "declared_rho": rho, "best_rho_sampled": best},
            internal=True, x="kept coefficients (ρ)", y="error per count (root mean square, and mean absolute)")

    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        facts["item order"] = "the order of the item list (FPA treats the counts as a signal in that order)"
        return facts

    def report_notes(self, params):
        return ("The counts are the inverse Fourier transform of the noisy kept coefficients (post-processing).",
                "People with more than Δ items keep a random Δ of them before anything is counted.")

    #: why FPA publishes no margin of error (dpdesk.mechanisms.publish)
    no_margin = ("keeping only the first ρ Fourier coefficients spreads every count over its neighbours in the "
                 "item list, and nothing the release computes privately tells by how much a given item was moved")


@register
class FPA(_Fourier):
    id = "fpa"
    name = "FPA — noisy Fourier coefficients"
    summary = "Keeps the first ρ Fourier coefficients of the counts, adds noise to them and transforms back."
    order = 25
    params = (
        BOUND,
        Param("rho", "int", 20, label="Kept coefficients ρ",
              help="How many Fourier coefficients to keep (1 to d/2 + 1). Few: little noise but the counts are "
                   "blurred; many: sharper but noisier. Declare it before looking at the data.",
              minimum=1, maximum=10**9, reference="GS §2.2, Theorem 2", log=True),
        DIAGNOSTICS,
        CLAMP,
    )

    def check(self, data, epsilon, params):
        """Decided from the declared ρ and the number of items d only: works on a domain without data."""
        if data is None:
            return params
        d, rho = data.n_items, params["rho"]
        if rho > d // 2 + 1:
            raise ParameterError(f"ρ = {rho} is too large for {d} items: at most "
                                 f"{d // 2 + 1} Fourier coefficients carry information.")
        if rho * d > MAX_PRODUCTS:
            raise ParameterError(f"ρ = {rho} is too large for {d:,} items: the exact transform would take "
                                 f"{rho * d:,} products (at most {MAX_PRODUCTS:,}). Keep at most "
                                 f"{MAX_PRODUCTS // d:,} coefficients.")
        return params

    def choose_rho(self, counts, epsilon, params, d):
        return params["rho"]

    def expected_error(self, epsilon, params, facts):
        d = facts.get("number of items (d)")
        if not d:
            return None
        rho = params["rho"]
        _, _, scale = self.noise_scale(d, rho, params["bound"], epsilon)
        rms = float(noise_rms(d, rho, scale))
        within = LAPLACE_95_PER_SD * rms  # as the margins: at least 95% (module publish, margin notes)
        return {"noise_scale": scale, "noise_rms_per_count": rms, "within_95": within, "text":
                f"The noise on each published count has a standard deviation of about {rms:,.3g} (95% within "
                f"±{within:,.3g} or less). On top of it comes the error of keeping only {rho} Fourier "
                "coefficients, which depends on the data and is often much larger."}


@register
class FPAOracle(_Fourier):
    id = "fpa-oracle"
    name = "FPA with the best ρ (NOT private)"
    summary = ("For comparison only: picks ρ by the true error, as the GS paper did for FPA. Reading the true "
               "data to choose ρ is not private, so this can never be released.")
    order = 26
    releasable = False
    params = (BOUND, DIAGNOSTICS, CLAMP)

    transform_text = "floating-point FFT (comparison aid, not private anyway)"

    def kept_coordinates(self, counts, rho):
        """The oracle may keep up to d/2 + 1 coefficients; being no release, it uses the fast FFT."""
        spectrum = np.fft.rfft(counts.astype(np.float64))[:rho] * float(2**WEIGHT_BITS)
        whole = [np.array([int(x) for x in np.round(part)], dtype=object) for part in (spectrum.real, spectrum.imag)]
        return pack_parts(*whole, counts.size)

    def choose_rho(self, counts, epsilon, params, d):
        candidates = plot_sizes(d // 2 + 1, ORACLE_CANDIDATES)
        curve = mae_curve(counts, candidates, params["bound"], epsilon)
        return int(candidates[np.argmin(curve["expected_mae"])])

    def report_notes(self, params):
        return ("NOT PRIVATE: ρ was chosen by the error against the true counts (comparison aid only).",
                *super().report_notes(params))
