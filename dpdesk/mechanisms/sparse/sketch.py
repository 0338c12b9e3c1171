"""Noisy Count sketch (Cormode et al. App. C.6; Charikar, Chen & Farach-Colton 2002).

A sketch of depth d and width w has d rows of w buckets. Row j hashes each cell i to a
bucket h_j(i) and a sign g_j(i) ∈ {−1, +1}, and bucket b holds Σ_{i: h_j(i)=b} g_j(i)·M(i).
g_j(i)·C_j[h_j(i)] is an unbiased estimate of M(i); we average the d rows (the paper's
Lemma 5: variance O(‖M‖₂/(wd) + d/ε²)).

Sensitivity. The hash functions are fixed before the data are looked at (drawn at random,
independent of the data, and published). Adding or removing one person changes one cell
by 1, which changes exactly one bucket per row, by g_j(i) = ±1: the L1 sensitivity of the
w·d buckets is d. Exact discrete Laplace noise of scale d/ε on every bucket is ε-DP. (The
paper's 2d is for neighbours that *change* one person's record, which moves a count
between two cells.)

Hashing. Simple tabulation hashing (Pǎtraşcu & Thorup 2012), which is 3-independent: the
cell number's bytes index tables of random 64-bit words that are XOR-ed. The bucket is
the top 32 bits times w over 2³², the sign the lowest bit. The tables are expanded from a
public 256-bit key with SHA-256 in counter mode, so the key printed in the report is all
a recipient needs to query the sketch (:func:`hash_tables`). The key comes from the
release's random source: it does not depend on the data.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ...errors import ParameterError
from ...privacy.noise import add_discrete_laplace
from ...privacy.randomness import RandomSource


def index_bytes(domain_size: int) -> int:
    """Bytes of a cell number that the hash reads."""
    return max(1, ((int(domain_size) - 1).bit_length() + 7) // 8)


def hash_tables(key: bytes, depth: int, nbytes: int) -> np.ndarray:
    """Tabulation tables (depth, nbytes, 256) of uint64 from a public key (SHA-256 counter mode)."""
    words_needed = depth * nbytes * 256
    stream = bytearray()
    counter = 0
    while len(stream) < 8 * words_needed:
        stream += hashlib.sha256(key + counter.to_bytes(8, "little")).digest()
        counter += 1
    words = np.frombuffer(bytes(stream[: 8 * words_needed]), dtype="<u8").astype(np.uint64)
    return words.reshape(depth, nbytes, 256)


def hash_cells(tables: np.ndarray, cells: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Buckets (depth, k) and signs (depth, k) of the given cell numbers."""
    cells = np.asarray(cells, dtype=np.int64).astype(np.uint64)
    depth, nbytes, _ = tables.shape
    hashes = np.zeros((depth, cells.size), dtype=np.uint64)
    for k in range(nbytes):
        byte = ((cells >> np.uint64(8 * k)) & np.uint64(255)).astype(np.intp)
        hashes ^= tables[:, k, :][:, byte]
    buckets = ((hashes >> np.uint64(32)) * np.uint64(width)) >> np.uint64(32)
    signs = np.where((hashes & np.uint64(1)) == 1, 1, -1).astype(np.int64)
    return buckets.astype(np.int64), signs


def sketch_counts(tables: np.ndarray, indices: np.ndarray, counts: np.ndarray, width: int) -> np.ndarray:
    """The exact sketch (depth, width) of the non-zero cells (int64)."""
    depth = tables.shape[0]
    out = np.zeros((depth, width), dtype=np.int64)
    for start in range(0, indices.size, 1 << 20):
        stop = min(start + (1 << 20), indices.size)
        buckets, signs = hash_cells(tables, indices[start:stop], width)
        for row in range(depth):
            np.add.at(out[row], buckets[row], signs[row] * counts[start:stop])
    return out


def noisy_sketch(indices: np.ndarray, counts: np.ndarray, domain_size: int, width: int, depth: int,
                 epsilon: float, source: RandomSource) -> tuple[np.ndarray, bytes]:
    """Noisy buckets (depth·width, row after row) and the public hash key."""
    if width < 1 or depth < 1 or width >= 2**32:
        raise ParameterError("The sketch needs 1 ≤ width < 2^32 and depth ≥ 1.")
    key = source.words(4).astype("<u8").tobytes()
    tables = hash_tables(key, depth, index_bytes(domain_size))
    exact = sketch_counts(tables, indices, counts, width)
    noisy = add_discrete_laplace(exact.ravel(), depth / epsilon, source)
    return noisy, key


def estimate_sets(tables: np.ndarray, buckets_flat: np.ndarray, width: int, cells: np.ndarray,
                  groups: np.ndarray, group_count: int) -> np.ndarray:
    """Estimated sum over each group of cells: the mean over rows of Σ g_j(i)·C_j[h_j(i)]."""
    depth = tables.shape[0]
    totals = np.zeros((depth, group_count))
    for start in range(0, cells.size, 1 << 20):
        stop = min(start + (1 << 20), cells.size)
        buckets, signs = hash_cells(tables, cells[start:stop], width)
        for row in range(depth):
            contribution = signs[row] * buckets_flat[row * width + buckets[row]]
            totals[row] += np.bincount(groups[start:stop], weights=contribution, minlength=group_count)
    return totals.mean(axis=0)
