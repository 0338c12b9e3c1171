"""Detection that asks when it is unsure, never reads column names as items, and never garbles
text: the four misreadings of issue 14, encodings checked through the whole file, damaged Parquet."""

import gzip
import re
import subprocess
import sys

import pandas as pd
import pytest

import dpdesk
from dpdesk.data import sniff
from dpdesk.errors import DataError


def write(path, content):
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def cli_error(path, *options):
    result = subprocess.run([sys.executable, "-m", "dpdesk.cli", "inspect", str(path), *options],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpdesk: error:") and path.name in lines[0], result.stderr
    return lines[0]


def items(data):
    return sorted(str(label) for label in data.item_labels)


# --- unsure: ask (GUI) or refuse with the options (CLI) ------------------------------------------

def test_one_line_without_line_end_is_a_question_not_one_pair(tmp_path):
    path = write(tmp_path / "abc.csv", "a,b,c")  # was read as one person with item 'b'
    sniffed = sniff(path)
    assert sniffed.unsure and "only one line" in sniffed.unsure
    assert [a.format for a in sniffed.alternatives] == ["transactions", "pairs"]
    with pytest.raises(DataError, match="cannot tell how the file is laid out"):
        dpdesk.load(path)
    message = cli_error(path)
    assert "--format transactions" in message and "--format pairs" in message
    basket = dpdesk.load(path, format="transactions")
    assert basket.n_rows == 1 and items(basket) == ["a", "b", "c"]


def test_ragged_pairs_header_words_are_never_items(tmp_path):
    path = write(tmp_path / "ragged.csv", "user,item,rating\n1,10,5\n1,11\n2,10,3,extra\n2,12,4\n")
    sniffed = sniff(path)
    assert sniffed.unsure and sniffed.header and "column names" in sniffed.unsure
    assert "header" in sniffed.settled_by
    message = cli_error(path)
    assert "--format transactions --header" in message and "--format pairs --header" in message
    as_baskets = dpdesk.load(path, format="transactions")  # the detected header is skipped
    assert not {"user", "item", "rating"} & set(items(as_baskets)) and as_baskets.n_rows == 4
    with pytest.raises(DataError, match="line 3"):  # read as the table it is: the ragged line is named
        dpdesk.load(path, format="pairs", header=True)


def test_whitespace_table_with_column_names_asks(tmp_path):
    path = write(tmp_path / "ws.dat", "user item rating\n1 10 5\n1 11 3\n")
    assert sniff(path).unsure
    cli_error(path)
    chosen = dpdesk.load(path, header=True)  # the steward's answer settles it
    assert chosen.n_rows == 2 and "user" not in items(chosen)


def test_three_words_per_line_could_be_baskets_or_pairs(tmp_path):
    path = write(tmp_path / "words.csv", "milk,bread,eggs\ntea,milk,jam\n")
    sniffed = sniff(path)
    assert sniffed.unsure and {a.format for a in sniffed.alternatives} == {"pairs", "transactions"}
    cli_error(path)
    numeric = write(tmp_path / "ratings.csv", "1,10,5\n1,11,3\n")  # a value column: plainly pairs
    assert sniff(numeric).format == "pairs" and not sniff(numeric).unsure


def test_a_matrix_with_bad_values_is_a_matrix_and_the_value_is_reported(tmp_path):
    path = write(tmp_path / "m.csv", "id,a,b,c\n1,0,1,1\n2,1,2,0\n3,0,1,x\n")  # was read as pairs
    assert sniff(path).format == "matrix"
    with pytest.raises(DataError, match="'2' is not 0 or 1") as caught:
        dpdesk.load(path)
    assert caught.value.line == 3 and caught.value.column == "b"
    pairs = write(tmp_path / "p.csv", "user,item,click\n7,10,1\n8,11,0\n9,10,1\n")
    assert sniff(pairs).format == "pairs"


# --- encodings: never garbled, errors name the line and the encoding ------------------------------

def test_utf8_with_a_stray_latin1_byte_is_refused_not_garbled(tmp_path):
    path = write(tmp_path / "mixed.csv", b"item\ncaf\xc3\xa9\nth\xe9\n")  # was 'cafÃ©' (Latin-1 guess)
    with pytest.raises(DataError) as caught:
        dpdesk.load(path)
    assert caught.value.line == 3 and caught.value.column == 3 and "utf-8" in str(caught.value)
    latin = dpdesk.load(path, encoding="latin-1", format="transactions")
    assert "cafÃ©" in items(latin)  # the steward's explicit choice is honoured


def test_a_bad_byte_after_the_head_names_its_line_and_the_encoding(tmp_path):
    lines = [f"{i} {i + 1}" for i in range(300_000)] + ["caf\xe9"]  # 3.8 MB, past the 1 MB head
    path = write(tmp_path / "late.dat", ("\n".join(lines) + "\n").encode("latin-1"))
    with pytest.raises(DataError) as caught:
        dpdesk.load(path)
    assert caught.value.line == 300_001 and "utf-8" in str(caught.value)
    assert "detected from the file's start" in str(caught.value)
    assert "caf\xe9" in items(dpdesk.load(path, encoding="latin-1"))


def test_latin1_files_and_c1_bytes(tmp_path):
    latin = write(tmp_path / "l.dat", "pain café\nthé\n".encode("latin-1"))
    assert items(dpdesk.load(latin)) == ["café", "pain", "thé"]
    c1 = write(tmp_path / "c1.dat", b"pain caf\xe9\nd\x80 x\n")  # 0x80 is a control code in Latin-1
    with pytest.raises(DataError, match="Latin-1") as caught:
        dpdesk.load(c1)
    assert caught.value.line == 2
    assert "d\u20ac" in items(dpdesk.load(c1, encoding="cp1252"))  # cp1252: 0x80 is the euro sign
    gz = tmp_path / "g.dat.gz"
    gz.write_bytes(gzip.compress(b"ok\n\xff\xfe\n"))
    with pytest.raises(DataError):
        dpdesk.load(gz, encoding="utf-8")


def test_encodings_that_do_not_keep_ascii_are_refused(tmp_path):
    path = write(tmp_path / "u16.csv", "a b\n".encode("utf-16"))
    with pytest.raises(DataError):
        dpdesk.load(path, encoding="utf-16")
    with pytest.raises(DataError, match="unknown text encoding"):
        dpdesk.load(path, encoding="klingon")


# --- damaged Parquet --------------------------------------------------------------------------------

@pytest.fixture
def parquet_bytes(tmp_path, data_dir):
    frame = pd.read_csv(data_dir / "ml-latest-small_ratings.csv.gz").head(3000)
    path = tmp_path / "good.parquet"
    frame.to_parquet(path)
    return path.read_bytes()


def flip(content: bytes, start: int, stop: int) -> bytes:
    damaged = bytearray(content)
    for i in range(start, stop):
        damaged[i] ^= 0x5A
    return bytes(damaged)


@pytest.mark.parametrize("damage", ["bad magic", "truncated", "last bytes cut", "footer", "column data"])
def test_damaged_parquet_is_one_clear_line(tmp_path, parquet_bytes, damage):
    content = {
        "bad magic": b"PAR1" + b"\x00not really" * 50,
        "truncated": parquet_bytes[: len(parquet_bytes) // 2],
        "last bytes cut": parquet_bytes[:-3],
        "footer": flip(parquet_bytes, len(parquet_bytes) - 400, len(parquet_bytes) - 8),
        "column data": flip(parquet_bytes, 200, 1200),
    }[damage]
    path = write(tmp_path / "broken.parquet", content)
    try:
        data = dpdesk.load(path)
    except DataError as error:
        assert "broken.parquet" in str(error) and "\n" not in str(error)
        if damage != "column data":
            assert re.search("Parquet", str(error))
            cli_error(path)
    else:  # damage in compressed pages may still decode to (wrong) values: then it is simply data
        assert damage == "column data" and data.n_rows > 0
