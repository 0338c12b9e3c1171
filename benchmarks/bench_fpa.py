"""FPA's exact transform against the floating-point FFT it replaced (issue #13, B1).

FPA computes its kept Fourier coefficients as exact integer sums with public dyadic
weights for every dataset (no data-dependent fallback to the FFT). This prints, from one
run on kosarak-sized counts (41,270 items), the time of the exact sums and of numpy's
FFT for several ρ, their ratio, and the products per second of the exact sums; and the
time of a whole FPA release on the same data, as a ratio to building the dataset.

    python benchmarks/bench_fpa.py
    python benchmarks/bench_fpa.py --items 100000 --rho 20 200
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

import dpdesk
from dpdesk.mechanisms import fpa


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=41_270)
    parser.add_argument("--rho", type=int, nargs="+", default=[20, 200, 2000])
    args = parser.parse_args()
    d = args.items
    rng = np.random.default_rng(0)
    counts = np.minimum(rng.zipf(1.3, d), 10**6).astype(np.int64)  # heavy-tailed item counts
    for rho in args.rho:
        exact, _ = timed(fpa.exact_coefficients, counts, rho)
        fft, _ = timed(lambda: np.fft.rfft(counts.astype(np.float64))[:rho])
        print(f"d = {d:,}, ρ = {rho:,}: exact sums {exact:.3f} s ({rho * d / exact / 1e6:.0f}M products/s), "
              f"FFT {fft:.4f} s, exact / FFT = {exact / fft:.0f}×")
    # a whole release on a kosarak-like dataset: people with 1..40 items
    people = 200_000
    lengths = rng.integers(1, 41, people)
    indices = rng.integers(0, d, int(lengths.sum()))
    build, data = timed(lambda: dpdesk.from_matrix(sp.csr_matrix(
        (np.ones(indices.size, dtype=np.uint8), indices, np.concatenate([[0], np.cumsum(lengths)])),
        shape=(people, d))))
    release, _ = timed(lambda: dpdesk.release(data, "fpa", epsilon=1.0, bound=20, rho=20, rng=1,
                                              diagnostics=False))
    print(f"release on {people:,} people × {d:,} items (ρ = 20): {release:.2f} s; "
          f"building the dataset {build:.2f} s; release / build = {release / build:.2f}")


if __name__ == "__main__":
    main()
