"""Transaction (basket) files: one person per line, the items separated by spaces or a delimiter.

FIMI files such as ``retail.dat`` separate integer item ids with spaces (often with a
trailing space); basket CSVs such as ``groceries.csv`` separate item names with commas.
An item repeated within a line counts once; an empty line is a person with no items.

The file is streamed: pieces of a few megabytes are cut just after a separator (so no
item is split; a line may be), tokenized with numpy on the bytes, and only compact
arrays are kept — an int32 per item occurrence and per line — so memory follows the size
of the final CSR matrix, not of the text. Every step is linear in the length of the
piece, whatever the length of a line or of an item; an item label longer than
:data:`~dpdesk.data.textio.MAX_FIELD_BYTES` is refused. Integer item ids (FIMI) are read
as numbers; the first token that is not a plain integer switches to byte-string labels,
keeping what was read so far.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..errors import DataError
from ..tasks import CancelToken, ProgressFn, no_progress
from .dataset import natural_order
from .textio import (MAX_FIELD_BYTES, MemoryBudget, Source, TextCheck, checked_text, give_back_free_memory,
                     memory_budget)

_LF, _QUOTE, _ZERO = 10, 34, 48
_BOM = b"\xef\xbb\xbf"
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True  # what bytes.split() splits on, too
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[48:58] = True
#: how much of the file is read at a time (decompressed bytes)
PIECE_BYTES = 4 << 20
#: integer ids below this are tracked in a table of flags (one byte per possible id)
_FLAG_TABLE_LIMIT = 1 << 24
_RANK_TABLE_LIMIT = 1 << 22
#: memory the finished data needs per item occurrence (int32 column + uint8 value) and per
#: person (int32 row pointer, the int64 row counts mechanisms use, a little slack)
BYTES_PER_TOKEN, BYTES_PER_LINE = 5, 16


@dataclass
class Transactions:
    """What a transaction file holds, in compact pieces (file order)."""

    line_counts: list[np.ndarray] = field(default_factory=list)  # int32 tokens per line
    ids: list[np.ndarray] = field(default_factory=list)  # per token: its integer id or its label number
    integers: bool = True
    values: np.ndarray | None = None  # integer mode: the distinct ids, sorted
    labels: list[str] | None = None  # label mode: the label of each label number
    n_lines: int = 0
    n_tokens: int = 0


def parse_transactions(source: Source, *, delimiter: str | None = None, encoding: str = "utf-8",
                       automatic: bool = False, header: bool = False, budget: MemoryBudget | None = None,
                       progress: ProgressFn = no_progress, cancel: CancelToken | None = None) -> Transactions:
    """Read a transaction file (see the module documentation) within ``budget``.

    ``delimiter`` None means runs of whitespace. ``header`` skips the first line.
    ``automatic`` says the encoding was detected (so a later change of encoding is refused).
    """
    path = source.path
    if delimiter is not None and len(delimiter.encode()) != 1:
        raise DataError(f"the delimiter {delimiter!r} must be a single character", path=path)
    parser = Tokenizer(source, delimiter, encoding, automatic, header, budget or memory_budget(), progress, cancel)
    try:
        return parser.run()
    except QuotedFields:
        return _parse_quoted(source, delimiter, encoding, automatic, header, budget or memory_budget(),
                             progress, cancel)


class QuotedFields(Exception):
    """A delimited basket file with quoted fields: read again with the csv module."""


class Tokenizer:
    def __init__(self, source, delimiter, encoding, automatic, header, budget, progress, cancel):
        self.source, self.path = source, source.path
        self.delim = None if delimiter is None else ord(delimiter)
        self.separators = [bytes([b]) for b in (9, 10, 11, 12, 13, 32)] if self.delim is None \
            else [b"\n", bytes([self.delim])]
        self.text = TextCheck(encoding, source.path, automatic=automatic)
        self.codec = "utf-8" if encoding == "utf-8-sig" else encoding
        self.skip_header = header
        self.budget, self.progress, self.cancel = budget, progress, cancel
        self.result = Transactions()
        self.pending = 0  # tokens of the line still open at the end of the previous piece
        self.lines_before = 0  # complete lines before the current piece (for messages)
        self.flags = np.zeros(0, dtype=bool)  # integer ids seen (below _FLAG_TABLE_LIMIT)
        self.big_values: list[np.ndarray] = []  # distinct integer ids at or above the limit
        self.index: dict[bytes, int] = {}  # label mode: label bytes -> label number
        self.label_bytes = 0

    # -- the pieces ---------------------------------------------------------------------
    def run(self) -> Transactions:
        carry = b""
        last_byte = None
        consumed = 0
        with self.source.open() as reader:
            while True:
                if self.cancel is not None:
                    self.cancel.check()
                piece = reader.read(PIECE_BYTES)
                final = not piece
                consumed = reader.position
                if piece:
                    if last_byte is None and piece.startswith(_BOM) and self.text.encoding == "utf-8-sig":
                        piece = piece[3:]
                        self.text.check(_BOM)
                    last_byte = piece[-1] if piece else last_byte
                    if self.delim is not None and _QUOTE in piece:
                        raise QuotedFields()
                buffer = carry + piece if carry else piece
                if self.skip_header:
                    buffer = self._skip_header(buffer)
                if final:
                    chunk, carry = buffer, b""
                else:
                    cut = self._last_separator(buffer)
                    chunk, carry = buffer[:cut + 1], buffer[cut + 1:]
                    if len(carry) > MAX_FIELD_BYTES:
                        self._too_long(len(carry), carry)
                if chunk:
                    self.text.check(chunk, final=final)
                    self._tokenize(chunk)
                    self._check_memory(consumed)
                self.progress(0.9 * min(consumed / max(self.source.estimated_size, 1), 1.0),
                              "Reading transactions")
                if final:
                    break
        if last_byte is not None and last_byte != _LF and not self.skip_header:
            self._add_counts(np.zeros(1, dtype=np.int32))  # the last line has no line end
        return self._finish()

    def _skip_header(self, buffer: bytes) -> bytes:
        newline = buffer.find(b"\n")
        self.text.check(buffer if newline < 0 else buffer[:newline + 1])
        if newline < 0:
            return b""
        self.skip_header = False
        self.lines_before += 1
        return buffer[newline + 1:]

    def _last_separator(self, buffer: bytes) -> int:
        """Where to cut: the last separator, looked for only where a field could still end."""
        start = max(len(buffer) - MAX_FIELD_BYTES - 1, 0)
        return max(buffer.rfind(sep, start) for sep in self.separators)

    def _too_long(self, length: int, sample: bytes):
        raise DataError(f"an item label is longer than {MAX_FIELD_BYTES:,} bytes ({sample[:20]!r}…): "
                        "this does not look like a list of items", path=self.path, line=self.lines_before + 1,
                        expected="short item labels separated by " + ("spaces" if self.delim is None else
                                                                      repr(chr(self.delim))))

    def _check_memory(self, consumed: int) -> None:
        r = self.result
        so_far = r.n_tokens * BYTES_PER_TOKEN + r.n_lines * BYTES_PER_LINE + self.label_bytes + self.flags.nbytes
        expected = max(self.source.estimated_size, consumed, 1)
        if consumed < expected:
            self.budget.check(so_far * expected / max(consumed, 1), self.path, projected=True)
        self.budget.check(so_far, self.path, line=self.lines_before)

    # -- one piece ----------------------------------------------------------------------
    def _tokenize(self, chunk: bytes) -> None:
        c = np.frombuffer(chunk, dtype=np.uint8)
        if self.delim is None:
            is_token = ~_WHITESPACE[c]
            edges = np.diff(is_token.view(np.int8), prepend=np.int8(0), append=np.int8(0))
            del is_token
            starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
            del edges
        else:
            starts, ends = _delimited_fields(c, self.delim)
        lengths = ends - starts
        if lengths.size and int(lengths.max()) > MAX_FIELD_BYTES:
            k = int(np.argmax(lengths))
            self.lines_before += chunk.count(b"\n", 0, int(starts[k]))
            self._too_long(int(lengths[k]), chunk[starts[k]:starts[k] + 20])
        newlines = np.flatnonzero(c == _LF)
        before = np.searchsorted(starts, newlines)
        counts = np.diff(before, prepend=0).astype(np.int32)
        if counts.size:
            counts[0] += self.pending
            self.pending = int(starts.size - before[-1])
        else:
            self.pending += int(starts.size)
        if self.result.integers and not self._integers(c, starts, lengths):
            self._to_labels()
        if not self.result.integers:
            self._labels(c, chunk, starts, ends)
        self.result.n_tokens += int(starts.size)
        self._add_counts(counts)

    def _add_counts(self, counts: np.ndarray) -> None:
        if counts.size:
            if self.result.line_counts is not None:
                self.result.line_counts.append(counts)
            self.result.n_lines += int(counts.size)
            self.lines_before += int(counts.size)

    def _integers(self, c, starts, lengths) -> bool:
        """Integer mode: add the piece's ids; False when a token is not a plain integer."""
        if lengths.size == 0:
            return True
        longest = int(lengths.max())
        if longest > 18 or int(np.count_nonzero(_DIGIT[c])) != int(lengths.sum()):
            return False  # too long for 64 bits, or a byte that is not a digit inside a token
        if np.any((c[starts] == _ZERO) & (lengths > 1)):
            return False  # a leading zero: "07" must stay a label distinct from "7"
        dtype = np.int32 if longest <= 9 else np.int64
        padded = np.append(c, np.zeros(longest, dtype=np.uint8))  # digits past a token's end are ignored
        value = (c[starts] - _ZERO).astype(dtype)
        for j in range(1, longest):  # Horner over digit positions: linear, at most 18 passes
            digit = padded[starts + j].astype(dtype) - _ZERO
            value = np.where(lengths > j, value * 10 + digit, value)
        small = value < _FLAG_TABLE_LIMIT
        if not small.all():
            self.big_values.append(np.unique(value[~small]))
            self._flag(value[small])
        else:
            self._flag(value)
        self.result.ids.append(value.astype(np.int32) if dtype is np.int64 and int(value.max()) < 2**31 else value)
        return True

    def _flag(self, value: np.ndarray) -> None:
        if value.size:
            top = int(value.max())
            if top >= self.flags.size:
                grown = np.zeros(max(top + 1, 2 * self.flags.size), dtype=bool)
                grown[:self.flags.size] = self.flags
                self.flags = grown
            self.flags[value] = True

    def _distinct_integers(self) -> np.ndarray:
        small = np.flatnonzero(self.flags).astype(np.int64)
        if not self.big_values:
            return small
        return np.concatenate([small, np.unique(np.concatenate(self.big_values))])

    def _to_labels(self) -> None:
        """Switch to labels, turning the integer ids read so far into label numbers."""
        values = self._distinct_integers()
        for number, value in enumerate(values.tolist()):
            label = str(value).encode()
            self.index[label] = number
            self.label_bytes += len(label) + 100
        self.result.ids = [np.searchsorted(values, ids).astype(np.int32) for ids in self.result.ids]
        self.result.integers = False
        self.flags, self.big_values = np.zeros(0, dtype=bool), []

    def _labels(self, c, chunk: bytes, starts, ends) -> None:
        """Label mode: number the piece's tokens by their bytes (one LF-joined bytes split in C)."""
        if starts.size == 0:
            return
        marks = np.zeros(c.size + 1, dtype=np.int8)
        marks[starts] = 1
        marks[ends] -= 1
        keep = np.cumsum(marks, dtype=np.int8).view(bool)
        keep[ends] = True  # one separator byte after each token, written as LF below
        joined = np.append(c, np.uint8(_LF))
        joined[ends] = _LF
        tokens = joined[keep].tobytes().split(b"\n")
        tokens.pop()  # after the last LF
        del marks, keep, joined
        codes, uniques = pd.factorize(np.array(tokens, dtype=object))
        del tokens
        index = self.index
        before = len(index)
        numbers = np.fromiter((index.setdefault(u, len(index)) for u in uniques), dtype=np.int64,
                              count=len(uniques))
        if len(index) > before:
            self.label_bytes += sum(len(u) + 100 for u in uniques[numbers >= before])
        self.result.ids.append(numbers.astype(np.int32)[codes])

    def _finish(self) -> Transactions:
        result = self.result
        if self.pending:  # the tokens of the last line, which has no line end (run() added its count as 0)
            result.line_counts[-1][-1] += self.pending
            self.pending = 0
        if result.integers:
            result.values = self._distinct_integers()
        else:
            labels = list(self.index)
            self.index = {}
            try:
                result.labels = [label.decode(self.codec) for label in labels]
            except UnicodeDecodeError as error:  # pragma: no cover - checked piece by piece already
                raise DataError(f"an item label cannot be decoded as {self.codec} ({error})", path=self.path) from None
        self.progress(0.9, "Reading transactions")
        return result


def _delimited_fields(c: np.ndarray, delim: int) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the non-empty fields between delimiters/LFs, blanks trimmed (linear)."""
    separator = (c == delim) | (c == _LF)
    blank = _WHITESPACE[c] & ~separator
    solid = np.flatnonzero(~blank)  # separators and field bytes, in order
    is_sep = separator[solid]
    del separator, blank
    content = ~is_sep
    after_sep = np.empty(solid.size, dtype=bool)  # the previous solid byte is a separator (or none)
    after_sep[:1] = True
    after_sep[1:] = is_sep[:-1]
    before_sep = np.empty(solid.size, dtype=bool)
    before_sep[-1:] = True
    before_sep[:-1] = is_sep[1:]
    return solid[content & after_sep], solid[content & before_sep] + 1


def _parse_quoted(source: Source, delimiter: str, encoding: str, automatic: bool, header: bool,
                  budget: MemoryBudget, progress: ProgressFn, cancel: CancelToken | None) -> Transactions:
    """Delimited baskets with quoted fields: the csv module, streaming, into the same compact arrays."""
    from array import array

    index: dict[str, int] = {}
    counts, ids = array("i"), array("i")
    label_bytes = 0
    result = Transactions(integers=False)
    with checked_text(source, encoding, automatic=automatic) as text:
        reader = csv.reader(text, delimiter=delimiter)
        try:
            for fields in reader:
                if header:
                    header = False
                    continue
                items = {f.strip(): None for f in fields if f.strip()}
                counts.append(len(items))
                for item in items:
                    number = index.get(item)
                    if number is None:
                        if len(item) > MAX_FIELD_BYTES:
                            raise DataError(f"a field (item label) is longer than {MAX_FIELD_BYTES:,} characters",
                                            path=source.path, line=reader.line_num)
                        number = index[item] = len(index)
                        label_bytes += len(item) + 100
                    ids.append(number)
                if len(counts) % 65536 == 0:
                    if cancel is not None:
                        cancel.check()
                    budget.check(len(ids) * (BYTES_PER_TOKEN + 4) + len(counts) * (BYTES_PER_LINE + 4) + label_bytes,
                                 source.path, line=reader.line_num)
        except csv.Error as error:
            raise DataError(f"malformed quoted field ({error})", path=source.path, line=reader.line_num) from None
    result.line_counts = [np.frombuffer(counts, dtype=np.int32).copy()] if counts else []
    result.ids = [np.frombuffer(ids, dtype=np.int32).copy()] if ids else []
    result.labels = list(index)
    result.n_lines, result.n_tokens = len(counts), len(ids)
    progress(0.9, "Reading transactions")
    return result


def to_csr(lines: Transactions) -> tuple[sp.csr_matrix, np.ndarray]:
    """The CSR matrix (columns in natural label order, each row sorted, repeats merged) and its labels.

    The pieces are moved into the final arrays one at a time and released as they go, so
    the peak is the matrix plus one piece.
    """
    if lines.integers:
        values = lines.values if lines.values is not None else np.zeros(0, np.int64)
        labels = np.array([str(v) for v in values.tolist()], dtype=object)  # numeric order = natural order
        position = rank = None
        if values.size and values[-1] < _RANK_TABLE_LIMIT:  # a table lookup is faster than a binary search
            rank = np.zeros(int(values[-1]) + 1, dtype=np.int32)
            rank[values] = np.arange(values.size, dtype=np.int32)
    else:
        order = natural_order(lines.labels)
        labels = np.array(lines.labels, dtype=object)[order]
        position = np.empty(len(order), dtype=np.int32)
        position[order] = np.arange(len(order), dtype=np.int32)
        rank = None
    n_rows, n_cols, nnz = lines.n_lines, labels.size, lines.n_tokens
    index_dtype = np.int32 if max(nnz, n_cols, n_rows) < 2**31 else np.int64
    indices = np.empty(nnz, dtype=index_dtype)
    done = 0
    while lines.ids:
        ids = lines.ids.pop(0)
        if position is not None:
            mapped = position[ids]
        elif rank is not None:
            mapped = rank[ids]
        elif values.size and ids.size:
            mapped = np.searchsorted(values, ids)
        else:
            mapped = ids
        indices[done:done + ids.size] = mapped
        done += ids.size
        del ids, mapped
        give_back_free_memory()  # the piece's memory goes back as its copy comes in: the peak stays one piece
    indptr = np.empty(n_rows + 1, dtype=index_dtype)
    indptr[0] = 0
    row = 0
    while lines.line_counts:
        counts = lines.line_counts.pop(0)
        np.cumsum(counts, out=indptr[row + 1:row + 1 + counts.size])
        indptr[row + 1:row + 1 + counts.size] += indptr[row]
        row += counts.size
    assert done == nnz and row == n_rows and int(indptr[-1]) == nnz, "token and line counts disagree"
    csr = sp.csr_matrix((np.ones(nnz, dtype=np.uint8), indices, indptr), shape=(n_rows, n_cols), copy=False)
    csr.sum_duplicates()  # sorts each row in place and merges an item repeated within a line
    csr.data[:] = 1
    return csr, labels
