"""Loading a kosarak-sized transaction file (issue: foundation, speed and memory).

Generates a FIMI file like kosarak (990,002 rows, heavy-tailed row lengths up to 2,497,
about 8 million items, ~32 MB), then measures in one run:

* dpdesk.load time, and its ratio to a plain line-by-line Python reader building the same CSR;
* peak memory while loading (tracemalloc, which sees numpy's buffers) over
  (file size + final CSR size) — the target is below 4;

and then linear time whatever the lines (issue 14): the time for 8 MB over the time for
1 MB of one single token (refused: an item label that long is no label), of one line of
short items, of lines of 60 KB labels, and of a pairs table with 60 KB fields. A ratio
near 8 (or below, for a refusal) is linear; the old reader took 7 s per MB of one token.

Run: python benchmarks/bench_load.py [--rows N] [--linear-only]
(with PYTHONPATH=DIR to measure another checkout of dpdesk)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc

import numpy as np
import scipy.sparse as sp

import dpdesk
from dpdesk.errors import DpdeskError


def make_file(path: str, rows: int, columns: int = 41_270, max_len: int = 2_497, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    # heavy-tailed row lengths (Pareto-like), mean about 8 items, capped at max_len
    lengths = np.minimum(np.floor(rng.pareto(1.6, size=rows) * 4.8).astype(np.int64) + 1, max_len)
    lengths[rng.integers(rows)] = max_len
    # item popularity skewed (Zipf-like over 1..columns, popular items have small ids as in kosarak)
    total = int(lengths.sum())
    weights = 1.0 / np.arange(1, columns + 1) ** 1.05
    items = np.searchsorted(np.cumsum(weights) / weights.sum(), rng.random(total)) + 1
    with open(path, "w") as handle:
        start = 0
        chunk = []
        for length in lengths:
            chunk.append(" ".join(map(str, items[start:start + length].tolist())))
            start += length
            if len(chunk) == 20000:
                handle.write(" \n".join(chunk) + " \n")
                chunk = []
        if chunk:
            handle.write(" \n".join(chunk) + " \n")
    return total


def naive_load(path: str) -> sp.csr_matrix:
    """The obvious way: split each line in Python, map items to columns, build the CSR."""
    index: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    with open(path) as handle:
        for line in handle:
            seen = set()
            for token in line.split():
                if token not in seen:
                    seen.add(token)
                    indices.append(index.setdefault(token, len(index)))
            indptr.append(len(indices))
    return sp.csr_matrix((np.ones(len(indices), dtype=np.uint8), np.array(indices, dtype=np.int32),
                          np.array(indptr, dtype=np.int64)), shape=(len(indptr) - 1, len(index)))


LINEAR_CASES = {
    "one token": lambda size: b"a" * size,
    "one line of short items": lambda size: b" ".join(b"%d" % (i % 100_000) for i in range(size // 6)) + b"\n",
    "lines of 60 KB labels": lambda size: b"\n".join(b"%d" % i + b"x" * 60_000 for i in range(size // 60_000)) + b"\n",
    "pairs with 60 KB fields": lambda size: b"person,item\n" + b"\n".join(
        b"p%d," % (i % 7) + b"y" * 60_000 + b"%d" % i for i in range(size // 60_000)) + b"\n",
}


def linear_time(folder: str) -> None:
    print("linear time (seconds for 1 MB and 8 MB, their ratio; refusals count as answers):")
    for label, make in LINEAR_CASES.items():
        times, outcome = [], ""
        for size in (1 << 20, 8 << 20):
            path = os.path.join(folder, f"linear-{size}.csv" if "pairs" in label else f"linear-{size}.dat")
            with open(path, "wb") as handle:
                handle.write(make(size))
            t = time.perf_counter()
            try:
                data = dpdesk.load(path, format="pairs" if "pairs" in label else "transactions")
                outcome = f"loaded ({data.n_rows:,} rows)"
            except DpdeskError as error:
                outcome = f"refused: {str(error)[:70]}…"
            times.append(time.perf_counter() - t)
            os.remove(path)
        print(f"  {label:<26} {times[0]:6.2f} s  {times[1]:6.2f} s  ratio {times[1] / times[0]:4.1f}  {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=990_002)
    parser.add_argument("--linear-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        linear_time(folder)
        if args.linear_only:
            return
        path = os.path.join(folder, "kosarak_like.dat")
        t = time.perf_counter()
        total = make_file(path, args.rows)
        size = os.path.getsize(path)
        print(f"generated {args.rows:,} rows, {total:,} items, {size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s")

        t = time.perf_counter()
        data = dpdesk.load(path)
        fast = time.perf_counter() - t
        csr_bytes = data.matrix.data.nbytes + data.matrix.indices.nbytes + data.matrix.indptr.nbytes

        tracemalloc.start()
        dpdesk.load(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

        t = time.perf_counter()
        naive = naive_load(path)
        slow = time.perf_counter() - t
        assert naive.nnz == data.nnz and naive.shape == data.matrix.shape

        print(f"dpdesk.load: {fast:.2f} s for {data.n_rows:,} rows × {data.n_items:,} items, {data.nnz:,} non-zeros")
        print(f"line-by-line Python: {slow:.2f} s  →  speed-up {slow / fast:.1f}x (target ≥ 3x); "
              f"target < 3 s: {'met' if fast < 3 else 'NOT met'}")
        ratio = peak / (size + csr_bytes)
        print(f"peak memory while loading: {peak / 2**20:.0f} MiB = {ratio:.2f} × (file {size / 2**20:.0f} MiB + "
              f"CSR {csr_bytes / 2**20:.0f} MiB) (target < 4)")


if __name__ == "__main__":
    main()
