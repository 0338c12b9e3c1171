"""Loading a kosarak-sized transaction file (issue: foundation, speed and memory).

Generates a FIMI file like kosarak (990,002 rows, heavy-tailed row lengths up to 2,497,
about 8 million items, ~32 MB), then measures in one run:

* dpdesk.load time, and its ratio to a plain line-by-line Python reader building the same CSR;
* peak memory while loading (tracemalloc, which sees numpy's buffers) over
  (file size + final CSR size) — the target is below 4.

Run: python benchmarks/bench_load.py [--rows N]
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=990_002)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
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
