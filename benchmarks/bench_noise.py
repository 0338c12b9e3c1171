"""Secure exact discrete-Laplace noise: speed, memory, and OpenDP for comparison (privacy core).

Measured in one run:
* dpdesk's secure sampler (os.urandom, exact) for 10^7 counts — target < 2 s — and its peak
  memory (tracemalloc sees numpy buffers; target < 400 MiB including the 80 MB output);
* the same on 10^6 counts, and OpenDP's exact integer Laplace (`make_laplace` on an i64
  vector) on the same 10^6-count vector — target ratio ≥ 40×.

OpenDP is not a dependency of dpdesk: install it only where you run this benchmark
(`pip install opendp`); without it the comparison is skipped with a note.

Run: python benchmarks/bench_noise.py [--scale 28.9]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from dpdesk.privacy.noise import add_discrete_laplace, discrete_laplace
from dpdesk.privacy.randomness import SecureRandom


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=20 / np.log(2), help="noise scale Δ/ε (default Δ=20, ε=ln 2)")
    args = parser.parse_args()
    source = SecureRandom()
    discrete_laplace(source, args.scale, 1000)  # warm up

    counts = np.zeros(10_000_000, dtype=np.int64)
    t = time.perf_counter()
    noisy = add_discrete_laplace(counts, args.scale, source)
    big = time.perf_counter() - t
    del noisy
    tracemalloc.start()
    add_discrete_laplace(counts, args.scale, source)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"dpdesk secure exact discrete Laplace, 10^7 counts (scale {args.scale:.3g}): {big:.2f} s "
          f"= {1e7 / big / 1e6:.1f} M samples/s (target < 2 s); peak memory {peak / 2**20:.0f} MiB (target < 400)")

    million = np.zeros(1_000_000, dtype=np.int64)
    t = time.perf_counter()
    add_discrete_laplace(million, args.scale, source)
    ours = time.perf_counter() - t
    try:
        import opendp.prelude as dp
    except ImportError:
        print(f"dpdesk on 10^6 counts: {ours:.3f} s. OpenDP is not installed here: `pip install opendp` to compare.")
        return
    dp.enable_features("contrib")
    measurement = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=args.scale)
    values = [0] * 1_000_000
    t = time.perf_counter()
    measurement(values)
    theirs = time.perf_counter() - t
    print(f"10^6 counts: dpdesk {ours:.3f} s, OpenDP exact integer Laplace {theirs:.2f} s "
          f"→ dpdesk is {theirs / ours:.0f}× faster (target ≥ 40×)")


if __name__ == "__main__":
    main()
