"""The streaming transaction reader against a plain Python reading of the same bytes, for any
piece size (pieces cut lines, and tokens sit at every boundary)."""

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpdesk.data.transactions as transactions
import dpdesk.errors
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


# --- tables -------------------------------------------------------------------------------------

import dpdesk.data.tabular as tabular  # noqa: E402
from dpdesk.data.tabular import read_table  # noqa: E402

CELL_TEXT = ["0", "1", "12", "x", "milk", "a b", "", " ", "é", "\t", "\r"]


def table_reference(content: bytes, delimiter: bytes | None, header: bool):
    """(names, rows, line numbers) by plain Python: blank lines skipped, fields trimmed."""
    lines = content.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    kept = [(n + 1, line) for n, line in enumerate(lines)
            if line.strip(WHITESPACE) or (delimiter is not None and delimiter in line)]
    split = [(n, line.split() if delimiter is None else [f.strip(WHITESPACE) for f in line.split(delimiter)])
             for n, line in kept]
    if not split:
        return None
    width = len(split[0][1])
    if any(len(fields) != width for _, fields in split):
        return "ragged"
    names = [f.decode() for f in split[0][1]] if header else [f"column {k + 1}" for k in range(width)]
    names = tabular.distinct_names(names)  # repeated names become "a", "a.1"
    body = split[1:] if header else split
    return names, [[f.decode() for f in fields] for _, fields in body], [n for n, _ in body]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(st.sampled_from(CELL_TEXT), min_size=2, max_size=2), min_size=1, max_size=30),
       blanks=st.lists(st.integers(0, 40), max_size=4), delimiter=st.sampled_from([b",", b";", None]),
       header=st.booleans(), crlf=st.booleans(), piece=st.sampled_from([7, 64, 1 << 20]))
def test_tables_same_as_plain_reading(tmp_path, monkeypatch, rows, blanks, delimiter, header, crlf, piece):
    if delimiter is None:
        rows = [[cell for cell in row if cell.strip() and " " not in cell] or ["z"] for row in rows]
    lines = [(b" " if delimiter is None else delimiter).join(cell.encode() for cell in row) for row in rows]
    for position in blanks:
        lines.insert(min(position, len(lines)), b"  ")
    content = (b"\r\n" if crlf else b"\n").join(lines) + b"\n"
    path = tmp_path / "t.csv"
    path.write_bytes(content)
    monkeypatch.setattr(tabular, "TABLE_PIECE_BYTES", piece)
    expected = table_reference(content, delimiter, header)
    try:
        table = read_table(open_source(path), delimiter=None if delimiter is None else delimiter.decode(),
                           header=header, encoding="utf-8")
    except dpdesk.errors.DataError as error:
        assert expected in (None, "ragged") or (header and not expected[1]), (error, expected)
        return
    names, body, numbers = expected
    assert table.columns == names
    assert [[table.values(name)[i] for name in names] for i in range(table.n_rows)] == body
    assert table.line_numbers.tolist() == numbers
