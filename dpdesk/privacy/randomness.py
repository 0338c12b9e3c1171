"""Sources of random bits.

Every sampler in dpdesk draws raw 64-bit words from a :class:`RandomSource` and turns
them into the distribution it needs with exact integer arithmetic (or with
floating-point arithmetic whose error is checked, see :mod:`dpdesk.privacy.noise`).
The same code paths therefore run in both modes:

* **release mode** — :class:`SecureRandom` reads the operating system's CSPRNG
  (``os.urandom``, i.e. ``getrandom(2)`` on Linux). Only results made this way may be
  exported.
* **exploration mode** — :class:`SeededRandom` wraps a seeded ``numpy.random.Generator``
  (PCG64) for reproducible comparisons and tests. Results are marked and can never be
  exported as a release: a seeded generator is predictable.

:func:`resolve` maps the public ``rng`` argument (None / int seed / Generator) to a source.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import ParameterError

_URANDOM_CHUNK = 1 << 16  # os.urandom is fastest in 64 KiB requests here


class RandomSource:
    """Uniform 64-bit words plus exact helpers built on them."""

    secure: bool = False
    description: str = ""

    def words(self, count: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- helpers (exact unless stated) ---------------------------------------------------
    def uniform_int(self, high, size: int | None = None) -> np.ndarray:
        """Uniform integers in ``[0, high)`` (``high`` scalar or array), by rejection: exact."""
        if np.ndim(high) == 0:
            return self._uniform_int_scalar(int(high), 1 if size is None else int(size))
        high_arr = np.asarray(high, dtype=np.uint64)
        if np.any(high_arr == 0):
            raise ParameterError("uniform_int needs a positive upper limit")
        n = int(size) if size is not None else high_arr.size
        high_arr = np.broadcast_to(high_arr, (n,)).copy()
        # reject words in the incomplete top block so every residue is equally likely
        with np.errstate(over="ignore"):
            excess = (np.uint64(0) - high_arr) % high_arr  # = 2^64 mod high
        limit = np.uint64(2**64 - 1) - excess  # accept w <= limit
        out = np.empty(n, dtype=np.uint64)
        pending = np.arange(n)
        while pending.size:
            w = self.words(pending.size)
            ok = w <= limit[pending]
            out[pending[ok]] = w[ok] % high_arr[pending[ok]]
            pending = pending[~ok]
        return out.astype(np.int64)

    def _uniform_int_scalar(self, high: int, n: int) -> np.ndarray:
        if not 0 < high <= 2**64:
            raise ParameterError("uniform_int needs a positive upper limit")
        limit = (2**64 // high) * high  # accept words below the last complete block
        out = self.words(n)
        if limit < 2**64:
            bad = np.flatnonzero(out >= np.uint64(limit))
            while bad.size:
                out[bad] = self.words(bad.size)
                bad = bad[out[bad] >= np.uint64(limit)]
        if high < 2**64:
            out = out % np.uint64(high)
        return out.astype(np.int64) if high <= 2**63 else out

    def uniform01(self, size: int) -> np.ndarray:
        """Uniform floats in (0, 1) on the 2^-53 grid (for post-processing and public quantities)."""
        w = self.words(size) >> np.uint64(11)
        return (w.astype(np.float64) + 0.5) * 2.0**-53

    def bits(self, size: int) -> np.ndarray:
        """Fair coin flips (bool)."""
        return (self.words(size) & np.uint64(1)).astype(bool)

    def permutation(self, n: int) -> np.ndarray:
        """A uniformly random permutation of 0..n-1 (sort by random 64-bit keys, ties redrawn)."""
        keys = self.words(n)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        while n > 1 and np.any(sorted_keys[1:] == sorted_keys[:-1]):  # probability ~ n^2 / 2^65
            keys = self.words(n)
            order = np.argsort(keys, kind="stable")
            sorted_keys = keys[order]
        return order

    def bernoulli(self, p) -> np.ndarray:
        """Coin flips with heads probability ``p`` (array), to 2^-53 resolution.

        Used only where ``p`` is a public quantity or a function of an already-private
        value (post-processing), where this resolution cannot leak anything.
        """
        p = np.asarray(p, dtype=np.float64)
        return self.uniform01(p.size).reshape(p.shape) < p


class SecureRandom(RandomSource):
    """The operating system's CSPRNG (``os.urandom``)."""

    secure = True
    description = "operating system CSPRNG (os.urandom / getrandom)"

    def words(self, count: int) -> np.ndarray:
        count = int(count)
        nbytes = 8 * count
        if nbytes <= _URANDOM_CHUNK:
            return np.frombuffer(os.urandom(nbytes), dtype=np.uint64).copy()
        buffer = bytearray(nbytes)
        view = memoryview(buffer)
        for start in range(0, nbytes, _URANDOM_CHUNK):
            stop = min(start + _URANDOM_CHUNK, nbytes)
            view[start:stop] = os.urandom(stop - start)
        return np.frombuffer(buffer, dtype=np.uint64)


class SeededRandom(RandomSource):
    """A seeded numpy Generator: reproducible, predictable, never for a release."""

    secure = False

    def __init__(self, generator: np.random.Generator, seed=None):
        self.generator = generator
        self.seed = seed
        label = f"seed {seed}" if seed is not None else "a numpy Generator"
        self.description = f"seeded numpy PCG64 ({label}) — exploration only, not exportable"

    def words(self, count: int) -> np.ndarray:
        return self.generator.integers(0, 2**64, size=int(count), dtype=np.uint64, endpoint=False)

    def spawn(self, n: int) -> list["SeededRandom"]:
        return [SeededRandom(g, seed=self.seed) for g in self.generator.spawn(n)]


def resolve(rng) -> RandomSource:
    """``None`` → release mode (OS CSPRNG); int seed or Generator → exploration mode."""
    if rng is None:
        return SecureRandom()
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, np.random.Generator):
        return SeededRandom(rng)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return SeededRandom(np.random.default_rng(int(rng)), seed=int(rng))
    raise ParameterError("rng must be None (secure release), an integer seed or a numpy Generator.")
