"""Transaction (basket) files: one person per line, the items separated by spaces or a delimiter.

FIMI files such as ``retail.dat`` separate integer item ids with spaces (often with a
trailing space); basket CSVs such as ``groceries.csv`` separate item names with commas.
An item repeated within a line counts once; an empty line is a person with no items.

The parser works on the raw bytes with numpy, a few megabytes at a time: it finds the
tokens, turns integer tokens into numbers digit by digit, hashes other tokens, and builds
the CSR matrix directly from the number of tokens on each line. That keeps a 32 MB,
8-million-item file well under a few seconds and a few hundred megabytes.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from ..errors import DataError
from ..tasks import CancelToken, ProgressFn, no_progress

CHUNK_BYTES = 4 << 20
_SPACE, _TAB, _CR, _LF, _QUOTE = 32, 9, 13, 10, 34
_P1 = np.uint64(0x100000001B3)
_P2 = np.uint64(0x9E3779B97F4A7C15)


class TokenTable:
    """Tokens of all lines: per-line token counts and per-token keys (ints or hashes)."""

    def __init__(self) -> None:
        self.line_counts: list[np.ndarray] = []
        self.keys: list[np.ndarray] = []
        self.keys2: list[np.ndarray] = []  # second hash for string tokens
        self.samples: dict[int, bytes] = {}  # one byte string per distinct string key


def parse_transactions(raw: bytes, *, delimiter: str | None = None, encoding: str = "utf-8",
                       path=None, progress: ProgressFn = no_progress,
                       cancel: CancelToken | None = None):
    """Parse transactions; returns ``(line_counts, columns, n_lines, labels)``.

    ``delimiter`` None means runs of spaces or tabs. ``columns[k]`` is the column of the
    k-th token in file order, ``line_counts[i]`` the number of tokens on line ``i``.
    Integer ids are parsed as numbers (fast path); if any token is not a plain integer
    the file is read again with hashed string tokens.
    """
    if encoding == "utf-8-sig" and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if delimiter is not None and len(delimiter.encode()) != 1:
        raise DataError(f"the delimiter {delimiter!r} must be a single character", path=path)
    if delimiter is not None and b'"' in raw:
        return _parse_quoted(raw, delimiter, encoding, path)
    buf = np.frombuffer(raw, dtype=np.uint8)
    size = buf.size
    # chunk boundaries just after a newline, so no line is split
    bounds = [0]
    while bounds[-1] < size:
        end = min(bounds[-1] + CHUNK_BYTES, size)
        if end < size:
            newline = raw.rfind(b"\n", bounds[-1], end)
            end = newline + 1 if newline >= bounds[-1] else (raw.find(b"\n", end) + 1 or size)
        bounds.append(end)
    delim = None if delimiter is None else ord(delimiter)
    for integer_mode in (True, False):
        table = TokenTable()
        for k in range(len(bounds) - 1):
            if cancel is not None:
                cancel.check()
            if not _tokenize_chunk(buf[bounds[k]:bounds[k + 1]], delim, integer_mode, table):
                break  # a token that is not a plain integer: start again with string tokens
            progress(0.9 * bounds[k + 1] / size, "Reading transactions")
        else:
            break
    line_counts = np.concatenate(table.line_counts) if table.line_counts else np.zeros(0, np.int64)
    keys = _concat(table.keys)
    if integer_mode:
        columns, labels = _map_integers(keys)
    else:
        keys2 = np.concatenate(table.keys2) if table.keys2 else np.zeros(0, np.uint64)
        columns, labels = _map_strings(keys, keys2, table.samples, encoding, path)
    progress(1.0, "Reading transactions")
    return line_counts, columns, int(line_counts.size), labels


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    if not parts:
        return np.zeros(0, np.int64)
    dtype = np.result_type(*parts)
    return np.concatenate(parts).astype(dtype, copy=False)


def _tokenize_chunk(chunk: np.ndarray, delim: int | None, integer_mode: bool, table: TokenTable) -> bool:
    """Add one chunk's tokens to ``table``; False when integer mode meets a non-integer token."""
    newlines = np.flatnonzero(chunk == _LF)
    n_lines = newlines.size + (1 if chunk.size and chunk[-1] != _LF else 0)
    if delim is None:
        is_token = (chunk != _SPACE) & (chunk != _TAB) & (chunk != _CR) & (chunk != _LF)
        if integer_mode and np.any(((chunk < 48) | (chunk > 57)) & is_token):
            return False
        first = is_token.copy()
        first[1:] &= ~is_token[:-1]  # a token byte after a separator
        last = is_token
        last[:-1] &= ~is_token[1:]  # a token byte before a separator (in place: is_token is done)
        starts, ends = np.flatnonzero(first), np.flatnonzero(last) + 1
        del first, last, is_token
    else:
        separators = np.flatnonzero((chunk == delim) | (chunk == _LF))
        starts = np.concatenate([[0], separators + 1])
        ends = np.concatenate([separators, [chunk.size]])
        keep = starts < ends
        starts, ends = starts[keep], ends[keep]
        # trim spaces and carriage returns around fields
        last = chunk.size - 1
        for _ in range(64):
            lead = (starts < ends) & ((chunk[np.minimum(starts, last)] == _SPACE) | (chunk[np.minimum(starts, last)] == _CR))
            trail = (starts < ends) & ((chunk[ends - 1] == _SPACE) | (chunk[ends - 1] == _CR))
            if not lead.any() and not trail.any():
                break
            starts = starts + lead
            ends = ends - (trail & (starts < ends))
        keep = starts < ends
        starts, ends = starts[keep], ends[keep]
    lengths = ends - starts
    if integer_mode and lengths.size:
        if lengths.max() > 18 or np.any((chunk[starts] == 48) & (lengths > 1)):
            return False  # too long for 64 bits, or a leading zero ("07" must not merge with "7")
        if delim is not None:
            for j in range(int(lengths.max())):
                digit = chunk[np.minimum(starts + j, chunk.size - 1)]
                if np.any((lengths > j) & ((digit < 48) | (digit > 57))):
                    return False
    # tokens per line: how many token starts fall before each line end (cheaper than per-token lookups)
    line_ends = np.append(newlines, chunk.size)[:n_lines]
    table.line_counts.append(np.diff(np.searchsorted(starts, line_ends), prepend=0).astype(np.int64))
    if integer_mode:
        longest = int(lengths.max()) if lengths.size else 0
        dtype = np.int32 if longest <= 9 else np.int64
        value = np.empty(starts.size, dtype=dtype)
        for length in range(1, longest + 1):  # tokens of one length at a time: a small matrix of digits
            chosen = np.flatnonzero(lengths == length)
            if chosen.size:
                digits = chunk[starts[chosen][:, None] + np.arange(length)].astype(dtype) - 48
                value[chosen] = digits @ (10 ** np.arange(length - 1, -1, -1)).astype(dtype)
        table.keys.append(value)
    else:
        h1 = np.full(starts.size, 0xCBF29CE484222325, dtype=np.uint64)
        h2 = lengths.astype(np.uint64)
        for j in range(int(lengths.max()) if lengths.size else 0):
            active = np.flatnonzero(lengths > j)
            byte = chunk[starts[active] + j].astype(np.uint64)
            h1[active] = (h1[active] ^ byte) * _P1
            h2[active] = (h2[active] + byte + np.uint64(1)) * _P2
        key = h1.view(np.int64)
        table.keys.append(key)
        table.keys2.append(h2)
        unseen, first = np.unique(key, return_index=True)
        for value, position in zip(unseen.tolist(), first.tolist()):
            if value not in table.samples:
                table.samples[value] = chunk[starts[position]:ends[position]].tobytes()
    return True


def _map_integers(values: np.ndarray):
    if values.size == 0:
        return np.zeros(0, np.int64), []
    top = int(values.max())
    if top < 50_000_000:
        present = np.zeros(top + 1, dtype=bool)
        present[values] = True
        unique = np.flatnonzero(present)
        lookup = (np.cumsum(present, dtype=np.int64) - 1).astype(np.int32 if unique.size < 2**31 else np.int64)
        columns = lookup[values]
    else:
        unique, columns = np.unique(values, return_inverse=True)
    return columns, [str(v) for v in unique.tolist()]


def _map_strings(keys: np.ndarray, keys2: np.ndarray, samples: dict, encoding: str, path):
    if keys.size == 0:
        return np.zeros(0, np.int64), []
    unique, columns = np.unique(keys, return_inverse=True)
    # the second hash must agree within each first-hash group, else two labels collided
    check = np.zeros(unique.size, dtype=np.uint64)
    check[columns] = keys2
    if np.any(check[columns] != keys2):  # pragma: no cover - a 64-bit collision
        raise DataError("two different item labels could not be told apart; please report this file")
    codec = "utf-8" if encoding in ("auto", "utf-8-sig") else encoding
    labels = [samples[int(k)].decode(codec, errors="replace") for k in unique.tolist()]
    return columns.astype(np.int64), labels


def _parse_quoted(raw: bytes, delimiter: str, encoding: str, path):
    """Slow but exact path for delimited baskets with quoted fields."""
    codec = "utf-8" if encoding in ("auto", "utf-8-sig") else encoding
    text = raw.decode(codec, errors="replace")
    index: dict[str, int] = {}
    line_counts: list[int] = []
    columns: list[int] = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        for fields in reader:
            items = [f.strip() for f in fields if f.strip()]
            line_counts.append(len(items))
            for item in items:
                columns.append(index.setdefault(item, len(index)))
    except csv.Error as error:
        raise DataError(f"malformed quoted field ({error})", path=path, line=reader.line_num) from None
    labels = [None] * len(index)
    for label, j in index.items():
        labels[j] = label
    return np.array(line_counts, dtype=np.int64), np.array(columns, dtype=np.int64), len(line_counts), labels
