"""Fuzzing the importers and project files (issue 14): no input gives a traceback (only
DpdeskError subclasses), a hang past a time limit, or an output file.

Random bytes, CSV-ish text, gzip and Parquet files cut or damaged at random places, and
random project JSON (whole documents, and the good project with one field replaced). Each
example runs under an alarm, so a hang fails the test instead of stalling CI; the whole
file costs about a minute.
"""

import contextlib
import functools
import gzip
import io
import json
import signal
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import dpdesk
from dpdesk import cli
from dpdesk.errors import DpdeskError
from dpdesk.project import Project
from tests.conftest import DATA

SECONDS_PER_EXAMPLE = 20
FORMATS = ["auto", "transactions", "pairs", "matrix", "records", "cells"]
FUZZ = settings(deadline=None, max_examples=1000, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int = SECONDS_PER_EXAMPLE):
    def expired(signum, frame):
        raise Hang(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def load_quietly(path, fmt="auto", **options):
    """Load; a DpdeskError is a fine answer, anything else (or a hang) fails the test."""
    with time_limit():
        try:
            data = dpdesk.load(path, format=fmt, **options)
        except DpdeskError as error:
            assert str(error) and "\n" not in str(error).strip(), repr(error)
            event(f"refused: {type(error).__name__}")
            return None
        event(f"loaded: {data.kind}")
        return data


@contextlib.contextmanager
def alone(folder, name: str, content: bytes):
    """``content`` as the only file of a fresh folder; afterwards nothing else may be in it."""
    with tempfile.TemporaryDirectory(dir=folder) as place:
        path = Path(place) / name
        path.write_bytes(content)
        yield path
        assert [p.name for p in Path(place).iterdir()] == [name]  # nothing written next to it


@pytest.fixture
def folder(tmp_path):
    return tmp_path


# --- importers -----------------------------------------------------------------------------------

# digits that are not ASCII (superscripts, Arabic-Indic), Unicode line ends, BOMs, controls
CSV_ALPHABET = st.sampled_from(list("0123456789abcxyz ,;|\t\"'\r\n\n\n.-+=éß€\x00\x1f\ufeff¹²٣\u2028\x85\x0b"))


@FUZZ
@given(content=st.binary(max_size=3000), fmt=st.sampled_from(FORMATS), compressed=st.booleans())
def test_random_bytes(folder, content, fmt, compressed):
    with alone(folder, "bytes.dat", gzip.compress(content) if compressed else content) as path:
        load_quietly(path, fmt)


@FUZZ
@given(text=st.text(CSV_ALPHABET, max_size=400), fmt=st.sampled_from(FORMATS),
       encoding=st.sampled_from(["utf-8", "latin-1", "cp1252"]), header=st.sampled_from(["auto", True, False]),
       delimiter=st.sampled_from(["auto", ",", "whitespace", "tab", ";"]))
def test_csv_ish_text(folder, text, fmt, encoding, header, delimiter):
    with alone(folder, "text.csv", text.encode(encoding, errors="replace")) as path:
        load_quietly(path, fmt, header=header, delimiter=delimiter)
        load_quietly(path, fmt, encoding=encoding, person=0, item=1)


CELLS = st.sampled_from(["0", "1", "1", "0", "7", "-3", "2.5", "", " ", "x", "milk", "a b", '"q,uoted"', '"say ""hi"""',
                         '"multi\nline"', "é", "NaN", "inf", "1e400", "count", "user", "\r"])


@FUZZ
@given(width=st.integers(1, 5), rows=st.integers(1, 12), data=st.data(), fmt=st.sampled_from(FORMATS),
       delimiter=st.sampled_from([",", "\t", ";", " "]), header=st.sampled_from(["auto", True, False]),
       ragged=st.booleans(), line_end=st.sampled_from(["\n", "\r\n"]))
def test_table_like_text(folder, width, rows, data, fmt, delimiter, header, ragged, line_end):
    """Tables of the right shape (or nearly): the importers' deeper paths, not only the first checks."""
    lines = []
    for _ in range(rows):
        cells = data.draw(st.lists(CELLS, min_size=width, max_size=width + (1 if ragged else 0)))
        lines.append(delimiter.join(cells))
    text = line_end.join(lines) + data.draw(st.sampled_from(["", line_end]))
    with alone(folder, "table.csv", text.encode("utf-8")) as path:
        options = {"header": header}
        if fmt in ("records", "cells") and data.draw(st.booleans()):
            options["attributes"] = [0]
        if fmt == "pairs" and data.draw(st.booleans()):
            options["value"] = width - 1
        load_quietly(path, fmt, **options)


@functools.lru_cache(maxsize=1)
def samples() -> dict:
    """A real gzip file and a real Parquet file to cut and damage."""
    frame = pd.read_csv(DATA / "ml-latest-small_ratings.csv.gz").head(2000)
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    return {"gz": (DATA / "chess.dat.gz").read_bytes()[:30_000], "parquet": buffer.getvalue()}


@FUZZ
@given(kind=st.sampled_from(["gz", "parquet"]), cut=st.floats(0, 1), flips=st.lists(
    st.tuples(st.floats(0, 1), st.integers(1, 255)), max_size=4))
def test_cut_and_damaged_gzip_and_parquet(folder, kind, cut, flips):
    content = bytearray(samples()[kind])
    for where, mask in flips:
        content[int(where * (len(content) - 1))] ^= mask
    content = bytes(content[: max(1, int(cut * len(content)))]) if cut < 0.97 else bytes(content)
    with alone(folder, "damaged.parquet" if kind == "parquet" else "damaged.dat.gz", content) as path:
        load_quietly(path)
        load_quietly(path, "pairs")


# --- project files ---------------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
FIELDS = ["dpdesk_project", "data", "data.path", "data.format", "data.options", "data.options.header",
          "data.options.attributes", "data.options.domains", "mechanisms", "compare", "compare.epsilons",
          "release", "release.mechanism", "release.epsilon", "release.params", "release.params.bound",
          "release.items", "release.items.kind", "release.items.size"]


def good(data_path):
    return {"dpdesk_project": 1,
            "data": {"path": str(data_path), "format": "transactions", "options": {"header": False}},
            "mechanisms": [{"mechanism": "lpa", "params": {}, "enabled": True}],
            "compare": {"epsilons": [1.0], "repeats": 2, "seed": 1},
            "release": {"mechanism": "lpa", "epsilon": 0.5, "params": {"bound": 5},
                        "items": {"kind": "range", "size": 80}}}


def replaced(content: dict, where: str, value) -> dict:
    *parents, last = where.split(".")
    target = content
    for key in parents:
        target = target.setdefault(key, {}) if isinstance(target, dict) else target
    if isinstance(target, dict):
        target[last] = value
    return content


def use_project(path, out):
    """Everything the GUI and CLI do with a project before a release: only DpdeskErrors may come out."""
    with time_limit():
        try:
            project = Project.load(path)
        except DpdeskError:
            return None
        for step in (project.release_choice, project.items_declaration, project.load_data):
            try:
                step()
            except DpdeskError:
                pass
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(["release", "--project", str(path), "--out", str(out)])
        assert status in (0, 2) and "Traceback" not in stderr.getvalue()
        if status:
            assert not out.exists()  # a refused release writes nothing
        return project


@FUZZ
@given(document=JSON)
def test_random_json_documents(folder, document, dpdesk_home):
    path = folder / "random.dpdesk"
    path.write_text(json.dumps(document), encoding="utf-8")
    use_project(path, folder / "out-random")


@FUZZ
@given(where=st.sampled_from(FIELDS), value=JSON)
def test_the_good_project_with_one_field_replaced(folder, data_dir, where, value, dpdesk_home):
    path = folder / "one.dpdesk"
    path.write_text(json.dumps(replaced(good(data_dir / "chess.dat.gz"), where, value)), encoding="utf-8")
    out = folder / "out-one"
    project = use_project(path, out)
    if project is not None and out.exists():  # it was a valid project after all: it released for real
        assert project.release["epsilon"] > 0 and not isinstance(project.release["epsilon"], bool)
        for child in out.iterdir():
            child.unlink()
        out.rmdir()
