"""Exact random choices with probabilities that are real numbers, not floats.

A sampler whose probabilities are floating-point approximations of the true ones is
(ε, δ)-DP at best: an event whose true probability differs from the float one by 2⁻⁵³
breaks the pure-ε ratio. Here a probability is given by *rigorous enclosures*: a function
``boundaries(digits)`` returns intervals ``[lo, hi]`` (``decimal`` endpoints computed with
outward rounding) that contain the true values and shrink as ``digits`` grows. A draw
compares a uniform U, revealed 64 bits at a time, with those intervals:

* with the first 64-bit word, U is pinned to ``[w, w + 1)·2⁻⁶⁴``; when that interval lies
  entirely on one side of a boundary's enclosure (all but about 2⁻⁶⁰ of the draws, since
  the enclosures are ~2⁻⁷² wide) the comparison is decided, vectorised, in ``uint64``;
* otherwise more words narrow U and the enclosures are recomputed with more digits
  until the comparison is decided (Python integers and ``decimal``; rare).

The outcome is exactly ``U < B`` for the real boundary B, so categorical and Bernoulli
draws have exactly the stated probabilities — pure ε-DP survives. The same lazy
comparison with a uniform is what :mod:`.noise` (geometric) and :mod:`.exponential` do.

:class:`Interval` is the small interval arithmetic the enclosures are written in: every
operation rounds its lower end down and its upper end up (``decimal`` contexts with
``ROUND_FLOOR`` / ``ROUND_CEILING`` and an unbounded exponent range, so e^(−10¹¹) is
fine); ``exp`` (correctly rounded half-even by ``decimal``) is widened by one unit in the
last place on each side.
"""

from __future__ import annotations

import math
from decimal import MAX_EMAX, MIN_EMIN, ROUND_CEILING, ROUND_FLOOR, Context, Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Callable

import numpy as np

from .randomness import RandomSource

FIRST_DIGITS = 40  # ~2^-133: enclosures of this precision decide almost every draw at 64 bits
MAX_DIGITS = 20_000  # an enclosure that cannot be narrowed by then is a bug, not bad luck
_FAST_WIDTH = Decimal(2) ** -72  # boundaries this tight leave ~2^-63 of the draws undecided


@lru_cache(maxsize=64)
def contexts(digits: int) -> tuple[Context, Context]:
    """(round-down, round-up) decimal contexts with ``digits`` significant digits."""
    down = Context(prec=digits, rounding=ROUND_FLOOR, Emin=MIN_EMIN, Emax=MAX_EMAX)
    up = Context(prec=digits, rounding=ROUND_CEILING, Emin=MIN_EMIN, Emax=MAX_EMAX)
    return down, up


class Interval:
    """A real number known to lie in ``[lo, hi]`` (``Decimal`` ends), at ``digits`` precision."""

    __slots__ = ("lo", "hi", "digits")

    def __init__(self, lo: Decimal, hi: Decimal, digits: int):
        self.lo, self.hi, self.digits = lo, hi, digits

    @classmethod
    def exact(cls, value, digits: int) -> "Interval":
        """An int, float (its exact binary value) or Fraction, enclosed."""
        if isinstance(value, Fraction):
            if value.denominator == 1:
                point = Decimal(value.numerator)
                return cls(point, point, digits)
            down, up = contexts(digits)
            num, den = Decimal(value.numerator), Decimal(value.denominator)
            return cls(down.divide(num, den), up.divide(num, den), digits)
        point = Decimal(value)  # exact for int and float
        return cls(point, point, digits)

    def _other(self, other) -> "Interval":
        return other if isinstance(other, Interval) else Interval.exact(other, self.digits)

    def __add__(self, other):
        other = self._other(other)
        down, up = contexts(self.digits)
        return Interval(down.add(self.lo, other.lo), up.add(self.hi, other.hi), self.digits)

    __radd__ = __add__

    def __sub__(self, other):
        other = self._other(other)
        down, up = contexts(self.digits)
        return Interval(down.subtract(self.lo, other.hi), up.subtract(self.hi, other.lo), self.digits)

    def __rsub__(self, other):
        return self._other(other) - self

    def __neg__(self):
        return Interval(-self.hi, -self.lo, self.digits)

    def __mul__(self, other):
        other = self._other(other)
        down, up = contexts(self.digits)
        ends = [(a, b) for a in (self.lo, self.hi) for b in (other.lo, other.hi)]
        return Interval(min(down.multiply(a, b) for a, b in ends), max(up.multiply(a, b) for a, b in ends),
                        self.digits)

    __rmul__ = __mul__

    def __truediv__(self, other):
        other = self._other(other)
        if other.lo <= 0 <= other.hi:
            raise ZeroDivisionError("interval division by an interval that contains 0")
        down, up = contexts(self.digits)
        ends = [(a, b) for a in (self.lo, self.hi) for b in (other.lo, other.hi)]
        return Interval(min(down.divide(a, b) for a, b in ends), max(up.divide(a, b) for a, b in ends),
                        self.digits)

    def __rtruediv__(self, other):
        return self._other(other) / self

    def exp(self) -> "Interval":
        """e^x (monotone): the correctly rounded ends, widened by one unit in the last place."""
        down, up = contexts(self.digits)
        return Interval(down.exp(self.lo).next_minus(down), up.exp(self.hi).next_plus(up), self.digits)

    def clamp01(self) -> "Interval":
        """The part of the enclosure inside [0, 1] (for probabilities known to lie there)."""
        zero, one = Decimal(0), Decimal(1)
        return Interval(min(max(self.lo, zero), one), max(min(self.hi, one), zero), self.digits)

    @property
    def width(self) -> Decimal:
        return self.hi - self.lo

    def __repr__(self) -> str:
        return f"Interval({self.lo:.6e}, {self.hi:.6e}, digits={self.digits})"


def exp_neg(x, digits: int) -> Interval:
    """e^(−x) for an exact x (int, float or Fraction; its negation is exact too)."""
    return Interval.exact(-x, digits).exp()


def enclose(compute: Callable[[int], list[Interval]], width: Decimal, digits: int = FIRST_DIGITS) -> list[Interval]:
    """``compute(digits)`` with digits doubled until every interval is narrower than ``width``.

    Cancellation in a closed form only costs digits; the loop finds how many.
    """
    while True:
        intervals = compute(digits)
        if all(interval.width <= width for interval in intervals):
            return intervals
        digits *= 2
        if digits > MAX_DIGITS:
            raise RuntimeError("an exact probability could not be enclosed")  # pragma: no cover


def normalized_boundaries(weights: list[Interval]) -> list[Interval]:
    """Cumulative shares B_j = (w_0 + … + w_j)/Σw, j < k−1, of non-negative weights."""
    total = weights[0]
    for weight in weights[1:]:
        total = total + weight
    out, running = [], None
    for weight in weights[:-1]:
        running = weight if running is None else running + weight
        out.append((running / total).clamp01())
    return out


class ExactDraw:
    """Categorical draws with exact probabilities, from enclosures of the cumulative boundaries.

    ``boundaries(digits)`` returns intervals around B_0 ≤ B_1 ≤ … ≤ B_{k−2} in [0, 1];
    category j has probability B_j − B_{j−1} (B_{−1} = 0, B_{k−1} = 1). A draw is the first
    j with U < B_j for a lazily revealed uniform U (module notes).
    """

    def __init__(self, boundaries: Callable[[int], list[Interval]]):
        self._compute = boundaries
        self._fast = None

    @classmethod
    def from_weights(cls, weights: Callable[[int], list[Interval]]) -> "ExactDraw":
        return cls(lambda digits: normalized_boundaries(weights(digits)))

    @classmethod
    def bernoulli(cls, probability: Callable[[int], Interval]) -> "ExactDraw":
        """Category 0 ("yes") with the given probability, 1 otherwise."""
        return cls(lambda digits: [probability(digits).clamp01()])

    def _fixed_point(self, bits: int, width: Decimal) -> list[tuple[int, int]]:
        """Integer bounds (L_j, H_j) with L_j ≤ 2^bits·B_j ≤ H_j."""
        scale = Decimal(2) ** bits
        out = []
        for interval in enclose(self._compute, width):
            down, up = contexts(interval.digits + bits // 3 + 10)
            low = int(down.multiply(interval.lo, scale).to_integral_value(rounding=ROUND_FLOOR))
            high = int(up.multiply(interval.hi, scale).to_integral_value(rounding=ROUND_CEILING))
            out.append((low, high))
        return out

    def draw(self, source: RandomSource, size: int) -> np.ndarray:
        """``size`` category numbers (int64)."""
        size = int(size)
        if self._fast is None:
            self._fast = self._fixed_point(64, _FAST_WIDTH)
        categories = len(self._fast) + 1
        out = np.full(size, categories - 1, dtype=np.int64)
        if size == 0 or categories == 1:
            return out
        words = source.words(size)
        open_ = np.ones(size, dtype=bool)  # no category decided yet
        undecided = np.zeros(size, dtype=bool)
        for j, (low, high) in enumerate(self._fast):
            # U < B_j is certain when (w + 1)/2^64 ≤ L_j/2^64; U ≥ B_j when w ≥ H_j (ends ≤ 2^64)
            below = open_ & (words < np.uint64(low) if low < 2**64 else open_)
            out[below] = j
            unsure = open_ & ~below & (words < np.uint64(high) if high < 2**64 else True)
            undecided |= unsure
            open_ &= ~below & ~unsure
        for i in np.flatnonzero(undecided):
            out[i] = self._draw_slowly(int(words[i]), source)
        return out

    def _draw_slowly(self, prefix: int, source: RandomSource) -> int:
        """Finish one draw: more words of U and narrower enclosures until every comparison is decided."""
        bits = 64
        while True:
            prefix = (prefix << 64) | int(source.words(1)[0])
            bits += 64
            if bits > 64 * 64:
                raise RuntimeError("an exact draw did not terminate")  # pragma: no cover
            decided = True
            for j, (low, high) in enumerate(self._fixed_point(bits, Decimal(2) ** -(bits + 8))):
                if prefix + 1 <= low:
                    return j
                if prefix < high:
                    decided = False
                    break
            if decided:
                return len(self._fast)


def rational_bernoulli(source: RandomSource, numerators: np.ndarray, denominator: int) -> np.ndarray:
    """Coin flips with heads probability exactly ``numerators / denominator`` (clipped to [0, 1]).

    ``denominator`` is a positive integer ≤ 2⁶³; an exact uniform integer below it is
    compared with each numerator.
    """
    numerators = np.asarray(numerators, dtype=np.int64)
    if numerators.size == 0:
        return np.zeros(0, dtype=bool)
    return source.uniform_int(int(denominator), numerators.size) < numerators


class Real:
    """A real number known by enclosures (``enclosure(digits)``, memoized), with a float approximation.

    The float is for sizes, reports and choosing how to draw; every random decision uses
    the enclosures. :meth:`of` wraps an exact number (int, float — its exact binary value —
    or Fraction).
    """

    def __init__(self, enclosure: Callable[[int], Interval], approx: float, exact: Fraction | None = None):
        self._compute = enclosure
        self._known: dict[int, Interval] = {}
        self.approx = float(approx)
        self.exact = exact  # the value itself when it is rational and known

    def enclosure(self, digits: int) -> Interval:
        if digits not in self._known:
            self._known[digits] = self._compute(digits)
        return self._known[digits]

    @classmethod
    def of(cls, value) -> "Real":
        if isinstance(value, Real):
            return value
        value = Fraction(value)
        return cls(lambda digits: Interval.exact(value, digits), float(value), value)

    def complement(self) -> "Real":
        """1 − x."""
        if self.exact is not None:
            return Real.of(1 - self.exact)
        return Real(lambda digits: 1 - self.enclosure(digits), 1.0 - self.approx)

    def __truediv__(self, other: "Real") -> "Real":
        if self.exact is not None and other.exact is not None:
            return Real.of(self.exact / other.exact)
        approx = self.approx / other.approx if other.approx else math.inf
        return Real(lambda digits: self.enclosure(digits) / other.enclosure(digits), approx)

    def __repr__(self) -> str:
        return f"Real(≈{self.approx:.6g})"


def uniform_below(source: RandomSource, highs: np.ndarray) -> np.ndarray:
    """Uniform integers in [0, K) for each K in ``highs`` (1 ≤ K < 2⁶³), exactly.

    r = w mod K for a 64-bit word w, kept when w's block [w − r, w − r + K) lies inside
    [0, 2⁶⁴) (all but K/2⁶⁴ of the words), redrawn otherwise: one division per element,
    where :meth:`RandomSource.uniform_int` spends two.
    """
    highs = np.asarray(highs, dtype=np.int64)
    if highs.size and highs.min() < 1:
        raise ValueError("uniform_below needs K ≥ 1")
    limits = np.asarray(highs, dtype=np.uint64)
    words = source.words(highs.size)
    out = words % limits
    pending = np.flatnonzero(words - out > np.uint64(0) - limits)
    out = out.astype(np.int64)
    while pending.size:
        words = source.words(pending.size)
        rest = words % limits[pending]
        kept = words - rest <= np.uint64(0) - limits[pending]
        out[pending[kept]] = rest[kept].astype(np.int64)
        pending = pending[~kept]
    return out
