"""Exact noise samplers, immune to floating-point attacks (Mironov 2012).

The geometric sampler
---------------------
``G`` with ``P(G ≥ g) = e^{-μg}`` (g = 0, 1, …) is ``G = ⌊−ln U / μ⌋`` for ``U`` uniform on
(0, 1]. We draw ``U`` from 31 random bits (63 when needed), which pins it to an interval
``(k·2⁻ᵇ, (k+1)·2⁻ᵇ]``, and compute ``x = −ln U / μ`` for the whole interval in
floating point with a rigorous error margin (the float inputs, ``log`` and the division
are each within a few ulps; the margin allows 2⁻⁴⁸ relative). When every real ``U`` in
the interval gives the same ``⌊x⌋`` — all but about ``10⁻¹⁴·scale`` of the draws — that
integer *is* the exact sample. Otherwise the sample is finished exactly: more random
bits narrow the interval and the floor is decided with ``decimal`` arithmetic at growing
precision. The output distribution is therefore exactly geometric with ratio ``e^{-μ}``
for the float ``μ`` used; no output depends on rounding of the input data.

Discrete Laplace
----------------
``X = S·G`` with a fair sign ``S``, rejecting ``(S = −, G = 0)``: then
``P(X = x) ∝ e^{−μ|x|}`` exactly (the two-sided geometric / discrete Laplace). For a
requested scale ``b`` we use ``μ = (1/b)·(1 − 2⁻⁵⁰)``, never more than ``1/b``, so the
noise is never narrower than asked even when ``b`` itself was rounded. Adding it to an
integer vector with L1 sensitivity ``Δ`` at scale ``b = Δ/ε`` is ε-DP: for neighbours the
output densities differ by at most ``e^{μ·Δ} ≤ e^{ε}``.

Real values on a power-of-two grid
----------------------------------
:func:`grid_laplace` rounds real values to a grid of width ``γ = 2^k`` and adds
``γ·DiscreteLaplace(b/γ)``. Rounding can move each coordinate that differs between
neighbours by up to ``γ`` more, so a vector with L1 sensitivity ``S`` in which at most
``c`` coordinates can change has, after rounding, sensitivity at most ``S + c·γ``; the
release costs ``ε′ = (S + c·γ)/b``. :func:`grid_scale` picks ``γ ≤ S/(c·2²⁴)`` and
returns the scale ``b = (S + c·γ)/ε`` that makes the total exactly ε, so the extra cost
is accounted, not ignored. Outputs are multiples of ``γ``: there is no porous float
support to attack.

Speed
-----
32 random bits per sample (31 for U, 1 for the sign), a ``log`` and a few vector
operations, in chunks of 2²⁰ (bounded memory). Draws that 31 bits cannot decide get 32
more bits (63 in all) and are decided again in floating point; the rare rest go to the
decimal path. See ``benchmarks/bench_noise.py``.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np

from ..errors import ParameterError
from .randomness import RandomSource

CHUNK = 1 << 16  # small blocks stay in cache: 1.5x faster than 2^20 here
MAX_SCALE = 2.0**50


def mu_from_scale(scale) -> np.ndarray:
    scale = np.asarray(scale, dtype=np.float64)
    if np.any(~np.isfinite(scale)) or np.any(scale <= 0):
        raise ParameterError("The noise scale must be a positive finite number.")
    if np.any(scale > MAX_SCALE):
        raise ParameterError(f"The noise scale {float(np.max(scale)):.3g} is too large to sample "
                             f"(at most 2^50); such a release would carry no information.")
    return (1.0 / scale) * (1.0 - 2.0**-50)


def _geometric_interval(k: np.ndarray, inv_mu, bits: int):
    """Floor of −ln U/μ for U in (k·2⁻ᵇ, (k+1)·2⁻ᵇ], and whether it is certain.

    ``inv_mu`` is 1/μ (scalar or array); ``bits`` ≤ 63. The margin ``tol`` covers the
    rounding of ``k`` to float, ``log``, and the products (a few ulps each; 2⁻⁴⁸ allowed).
    """
    kf = k.astype(np.float64)
    x_min = np.log((kf + 1.0) * 2.0**-bits)
    x_min *= -inv_mu
    with np.errstate(divide="ignore"):
        width = inv_mu / kf  # ≥ ln(1 + 1/k)/μ, the width of the interval in x
    tol = x_min * 2.0**-47
    tol += inv_mu * 2.0**-48
    low = np.floor(x_min - tol)
    width += x_min
    width += tol
    certain = low == np.floor(width)
    certain &= k > 0
    return low, certain


def _geometric_exact(k: int, bits: int, mu: float, source: RandomSource) -> int:
    """Finish one ambiguous geometric draw exactly with more bits and decimal arithmetic."""
    big_k = int(k)
    mu_d = Decimal(float(mu))  # exact value of the float μ
    for attempt in range(1, 200):
        big_k = (big_k << 64) | int(source.words(1)[0])
        bits += 64
        with localcontext() as ctx:
            ctx.prec = 60 + 30 * attempt
            ln2 = Decimal(2).ln()
            x_lo = -((Decimal(big_k + 1).ln() - bits * ln2) / mu_d)  # from the upper end of U
            if big_k > 0:
                x_hi = -((Decimal(big_k).ln() - bits * ln2) / mu_d)
                margin = Decimal(10) ** (-(ctx.prec - 20)) * (1 + abs(x_hi))
                floor_lo = math.floor(x_lo - margin)
                if floor_lo == math.floor(x_hi + margin):
                    return int(floor_lo)
    raise RuntimeError("geometric sampler did not converge")  # pragma: no cover


def _geometric_from_bits(k31: np.ndarray, mu, source: RandomSource) -> np.ndarray:
    """Exact geometric draws from 31-bit uniforms, refined with 32 more bits where needed."""
    scalar = np.ndim(mu) == 0
    inv = (1.0 / mu) if scalar else 1.0 / np.asarray(mu)
    low, certain = _geometric_interval(k31, inv, 31)
    out = low.astype(np.int64)
    todo = np.flatnonzero(~certain)
    if todo.size:
        # second stage: 63 bits for the undecided draws (about scale·10⁻⁸ of them)
        extra = source.words((todo.size + 1) // 2).view(np.uint32)[: todo.size].astype(np.uint64)
        k63 = (k31[todo].astype(np.uint64) << np.uint64(32)) | extra
        inv2 = inv if scalar else inv[todo]
        low2, certain2 = _geometric_interval(k63, inv2, 63)
        out[todo] = low2.astype(np.int64)
        for j in np.flatnonzero(~certain2):  # third stage, exact decimal (≈ never)
            m = float(mu) if scalar else float(np.asarray(mu)[todo[j]])
            out[todo[j]] = _geometric_exact(int(k63[j]), 63, m, source)
    return out


def _uint32_words(source: RandomSource, count: int) -> np.ndarray:
    return source.words((count + 1) // 2).view(np.uint32)[:count]


def geometric(source: RandomSource, mu, size: int) -> np.ndarray:
    """``size`` draws of G on {0,1,…} with ``P(G ≥ g) = e^{-μ g}`` (μ scalar or per element)."""
    size = int(size)
    mu_arr = np.asarray(mu, dtype=np.float64)
    if np.any(~(mu_arr > 0)) or np.any(~np.isfinite(mu_arr)):
        raise ParameterError("The geometric parameter must be positive.")
    out = np.empty(size, dtype=np.int64)
    for start in range(0, size, CHUNK):
        stop = min(start + CHUNK, size)
        m = float(mu_arr) if mu_arr.ndim == 0 else np.broadcast_to(mu_arr, (size,))[start:stop]
        k = _uint32_words(source, stop - start) >> np.uint32(1)
        out[start:stop] = _geometric_from_bits(k, m, source)
    return out


def discrete_laplace(source: RandomSource, scale, size: int | None = None) -> np.ndarray:
    """Integer noise with ``P(X = x) ∝ exp(−|x|/scale)`` exactly (see the module notes)."""
    scale_arr = np.asarray(scale, dtype=np.float64)
    n = int(size) if size is not None else scale_arr.size
    mu_all = mu_from_scale(scale_arr)
    scalar = mu_all.ndim == 0
    if not scalar:
        mu_all = np.broadcast_to(mu_all, (n,))
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        index = None  # None: the whole chunk; else the positions still to draw
        while True:
            count = stop - start if index is None else index.size
            w = _uint32_words(source, count)
            negative = (w & np.uint32(1)).astype(bool)
            if scalar:
                m = float(mu_all)
            else:
                m = mu_all[start:stop] if index is None else mu_all[start + index]
            g = _geometric_from_bits(w >> np.uint32(1), m, source)
            np.negative(g, out=g, where=negative)
            reject = negative & (g == 0)  # "−0" would double the weight of 0
            if index is None:
                out[start:stop] = g
                index = np.flatnonzero(reject)
            else:
                keep = ~reject
                out[start + index[keep]] = g[keep]
                index = index[reject]
            if index.size == 0:
                break
    return out


def add_discrete_laplace(values, scale, source: RandomSource) -> np.ndarray:
    """Integer values plus exact discrete Laplace noise of the given scale (per element or one)."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        if not np.all(values == np.round(values)):
            raise ParameterError("Discrete Laplace noise is added to whole numbers only.")
        values = np.round(values).astype(np.int64)
    return values.astype(np.int64) + discrete_laplace(source, scale, values.size).reshape(values.shape)


def grid_scale(sensitivity: float, epsilon: float, changing_coordinates: int) -> tuple[float, float]:
    """Grid width γ (a power of two) and Laplace scale b for a real vector released on the grid.

    After rounding to the grid the sensitivity is at most ``sensitivity + c·γ`` for
    ``c = changing_coordinates``; with ``γ ≤ sensitivity/(c·2²⁴)`` and
    ``b = (sensitivity + c·γ)/ε`` the release is exactly ε-DP.
    """
    if sensitivity <= 0 or epsilon <= 0 or changing_coordinates < 1:
        raise ParameterError("grid_scale needs positive sensitivity, ε and coordinate count")
    gamma = 2.0 ** math.floor(math.log2(sensitivity / (changing_coordinates * 2.0**24)))
    scale = (sensitivity + changing_coordinates * gamma) / epsilon
    if scale / gamma > MAX_SCALE:  # keep the grid-unit scale within the sampler's range
        gamma = 2.0 ** math.ceil(math.log2(scale / MAX_SCALE))
        scale = (sensitivity + changing_coordinates * gamma) / epsilon
    return gamma, scale


def grid_laplace(values, scale: float, gamma: float, source: RandomSource) -> np.ndarray:
    """Round ``values`` to multiples of ``gamma`` and add ``gamma``·discrete Laplace(scale/gamma).

    The caller must have chosen ``scale`` with :func:`grid_scale` (or an equivalent
    derivation) so that the rounding's extra sensitivity is paid for.
    """
    values = np.asarray(values, dtype=np.float64)
    scaled = values / gamma
    if scaled.size and np.max(np.abs(scaled)) >= 2.0**52:
        raise ParameterError("The values are too large for this grid (more than 2^52 grid steps); "
                             "use a coarser grid.")
    units = np.round(scaled).astype(np.int64)
    noisy = units + discrete_laplace(source, scale / gamma, units.size).reshape(units.shape)
    return noisy.astype(np.float64) * gamma


# --- accuracy of the noise (public: depends only on the scale) ---------------------------

def discrete_laplace_quantile(scale: float, coverage: float = 0.95) -> float:
    """Smallest z with P(|X| ≤ z) ≥ coverage for discrete Laplace of this scale."""
    alpha = math.exp(-1.0 / scale)
    # P(|X| > z) = 2 α^{z+1} / (1 + α)
    tail = 1.0 - coverage
    z = math.log(tail * (1 + alpha) / 2) / math.log(alpha) - 1
    return float(max(0, math.ceil(z - 1e-9)))


def discrete_laplace_mean_abs(scale: float) -> float:
    """E|X| = 2α/(1 − α²) for discrete Laplace with α = e^{−1/scale}."""
    alpha = math.exp(-1.0 / scale)
    return 2 * alpha / (1 - alpha * alpha)


def discrete_laplace_variance(scale: float) -> float:
    """Var X = E X² = 2α/(1 − α)² for discrete Laplace with α = e^{−1/scale}."""
    alpha = math.exp(-1.0 / scale)
    return 2 * alpha / (1 - alpha) ** 2


def laplace_quantile(scale: float, coverage: float = 0.95) -> float:
    """z with P(|X| ≤ z) = coverage for continuous Laplace (Shoaran Eq. 4: z = −λ ln pr)."""
    return -scale * math.log(1.0 - coverage)
