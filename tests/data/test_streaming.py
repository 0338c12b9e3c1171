"""The streaming transaction reader against a plain Python reading of the same bytes, for any
piece size (pieces cut lines, and tokens sit at every boundary)."""

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpdesk.data.transactions as transactions
from dpdesk.data.textio import open_source
from dpdesk.data.transactions import parse_transactions, to_csr

WHITESPACE = b" \t\r\x0b\x0c"


def reference(content: bytes, delimiter: bytes | None, header: bool) -> list[set[bytes]]:
    """Each line's set of items: split on LF; the bytes after the last LF are a line too."""
    lines = content.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if header:
        lines = lines[1:]
    if delimiter is None:
        return [set(line.split()) for line in lines]
    return [{field.strip(WHITESPACE) for field in line.split(delimiter)} - {b""} for line in lines]


def read(path, delimiter, header=False):
    lines = parse_transactions(open_source(path), delimiter=delimiter, encoding="utf-8", header=header)
    csr, labels = to_csr(lines)
    rows = [{labels[j].encode() for j in csr.indices[csr.indptr[i]:csr.indptr[i + 1]]} for i in range(csr.shape[0])]
    assert np.all(csr.data == 1)
    for i in range(csr.shape[0]):  # sorted, no repeats
        row = csr.indices[csr.indptr[i]:csr.indptr[i + 1]]
        assert np.all(np.diff(row) > 0)
    return rows, list(labels)


TOKENS = [b"1", b"2", b"10", b"123456789", b"2147483648", b"99999999999999999", b"007", b"a", b"caf\xc3\xa9", b"x y"]
SEPARATORS = [b" ", b"  ", b"\t", b"\n", b"\r\n", b",", b" , ", b"\n\n"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(TOKENS + SEPARATORS), max_size=60),
       piece=st.sampled_from([1, 2, 3, 5, 16, 1 << 20]), delimiter=st.sampled_from([None, b","]),
       header=st.booleans())
def test_same_as_plain_reading(tmp_path, monkeypatch, parts, piece, delimiter, header):
    content = b"".join(parts)
    path = tmp_path / "t.dat"
    path.write_bytes(content)
    monkeypatch.setattr(transactions, "PIECE_BYTES", piece)
    rows, labels = read(path, None if delimiter is None else delimiter.decode(), header)
    assert rows == reference(content, delimiter, header)
    assert len(set(labels)) == len(labels)


def test_gzip_in_small_pieces_and_integer_then_labels(tmp_path, monkeypatch):
    # integers for many pieces, then a label: the ids read so far become labels
    content = b"".join(b"%d %d \n" % (i, i * 7 % 13) for i in range(2000)) + b"apple 3\n"
    path = tmp_path / "t.dat.gz"
    path.write_bytes(gzip.compress(content))
    monkeypatch.setattr(transactions, "PIECE_BYTES", 97)
    rows, labels = read(path, None)
    assert rows == reference(content, None, False)
    assert labels[:3] == ["0", "1", "2"] and labels[-1] == "apple"  # natural order: numbers first


@pytest.mark.parametrize("content,expected", [
    (b"", []), (b"\n", [set()]), (b"1", [{b"1"}]), (b"1 2\n  ", [{b"1", b"2"}, set()]), (b"\n\n3\n", [set(), set(), {b"3"}]),
])
def test_edges(tmp_path, content, expected):
    path = tmp_path / "e.dat"
    path.write_bytes(content)
    assert read(path, None)[0] == expected
