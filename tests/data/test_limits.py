"""Inputs that cannot exhaust the machine: only regular files, a memory budget checked before
and while reading (a gzip bomb is stopped in time), linear-time reading of any line.

Anything that could hang or eat the machine runs in a subprocess with a timeout and an
address-space limit, so a regression fails the test instead of taking the machine down.
"""

import gzip
import json
import os
import resource
import socket
import subprocess
import sys
import time

import pytest

import dpdesk
from dpdesk.data.textio import MEMORY_ENV, available_memory, memory_budget, parse_memory_size
from dpdesk.errors import DataError, ParameterError, TooLargeError

GB = 1 << 30


def run_cli(*args, limit: int | None = None, env: dict | None = None, timeout: float = 120):
    """``dpdesk ARGS`` in a child process (optionally under RLIMIT_AS); returns (result, its peak RSS in bytes)."""
    def restrict():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    code = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:])\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, file=sys.stderr)\n"
            "sys.exit(r.returncode)\n")
    result = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "dpdesk.cli", *map(str, args)],
                            capture_output=True, text=True, timeout=timeout, preexec_fn=restrict,
                            env={**os.environ, **(env or {})})
    *lines, peak = result.stderr.strip().splitlines()
    result.stderr = "\n".join(lines)
    return result, int(peak)


def one_line_error(result, *patterns):
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpdesk: error:"), result.stderr[-2000:]
    for pattern in patterns:
        assert pattern in lines[0], lines[0]
    return lines[0]


def write_bomb(path, rows=60_000_000):
    """The issue's bomb: 60 M rows of ``1 2 3`` (360 MB of text) in about half a megabyte of gzip."""
    block = b"1 2 3\n" * 100_000
    with gzip.open(path, "wb", compresslevel=1) as handle:
        for _ in range(rows // 100_000):
            handle.write(block)
    return path


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    return write_bomb(tmp_path_factory.mktemp("bomb") / "bomb.dat.gz")


# --- only regular files --------------------------------------------------------------------------

def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.dat"
    os.mkfifo(fifo)
    result, _ = run_cli("inspect", fifo, timeout=60)  # opening a FIFO for reading used to block forever
    one_line_error(result, "pipe.dat", "named pipe (FIFO)", "not a regular file")
    with pytest.raises(DataError, match="named pipe"):
        dpdesk.load(fifo)
    link = tmp_path / "link.dat"
    link.symlink_to(fifo)
    with pytest.raises(DataError, match="named pipe"):
        dpdesk.load(link)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_devices_are_refused(device):
    if not os.path.exists(device):
        pytest.skip(f"{device} is missing")
    result, _ = run_cli("inspect", device, timeout=60)
    one_line_error(result, "a device", "not a regular file")


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        with pytest.raises(DataError, match="socket"):
            dpdesk.load(path)
    finally:
        server.close()


def test_a_symlink_to_a_regular_file_is_fine(tmp_path, data_dir):
    link = tmp_path / "chess.dat.gz"
    link.symlink_to(data_dir / "chess.dat.gz")
    assert dpdesk.load(link).n_rows == 3196


# --- the memory budget ----------------------------------------------------------------------------

def test_memory_sizes_and_the_default_budget(monkeypatch):
    assert parse_memory_size("2G") == 2 * GB and parse_memory_size("500MB") == 500 << 20
    assert parse_memory_size("1.5GiB") == int(1.5 * GB) and parse_memory_size(3 << 20) == 3 << 20
    for bad in ("lots", "-1G", "12 parsecs", "", True, "10K"):
        with pytest.raises(ParameterError):
            parse_memory_size(bad)
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    budget = memory_budget()
    available = available_memory()
    assert available and budget.limit == pytest.approx(max(available // 2, 64 << 20), rel=0.05)  # memory moves
    assert "half" in budget.origin
    monkeypatch.setenv(MEMORY_ENV, "300M")
    assert memory_budget().limit == 300 << 20 and MEMORY_ENV in memory_budget().origin
    assert memory_budget("1G").limit == GB  # the option wins over the environment


def test_a_file_over_the_budget_is_refused_with_the_way_out(data_dir, monkeypatch):
    retail = data_dir / "retail.dat.gz"  # 908,576 items: about 6 MB in memory
    with pytest.raises(TooLargeError) as caught:
        dpdesk.load(retail, memory_limit="1M", engine="memory")
    message = str(caught.value)
    assert "retail.dat.gz" in message and "too large for memory" in message and "--memory-limit" in message
    monkeypatch.setenv(MEMORY_ENV, "1M")
    with pytest.raises(TooLargeError, match=MEMORY_ENV):
        dpdesk.load(retail, engine="memory")
    # the automatic choice reads what does not fit with DuckDB, which spills instead
    spilled = dpdesk.load(retail)
    assert type(spilled).__name__ == "EngineDataset" and spilled.nnz == 908_576
    monkeypatch.delenv(MEMORY_ENV)
    assert dpdesk.load(retail, memory_limit="64M", engine="memory").nnz == 908_576
    result, _ = run_cli("inspect", retail, "--memory-limit", "1M", "--engine", "memory")
    one_line_error(result, "too large for memory", "1.0 MB")


def test_tables_are_within_the_budget_too(data_dir):
    with pytest.raises(TooLargeError, match="ml-latest-small_ratings"):
        dpdesk.load(data_dir / "ml-latest-small_ratings.csv.gz", memory_limit="1M", engine="memory")


def test_the_bomb_is_stopped_early_under_an_address_space_limit(bomb):
    # 2 GB of address space for the whole process: the import alone takes a few hundred MB
    started = time.monotonic()
    result, peak = run_cli("inspect", bomb, "--engine", "memory", limit=2 * GB, timeout=300)
    one_line_error(result, "bomb.dat.gz", "too large for memory")
    assert peak < 2 * GB
    # decided from the first pieces, long before the 360 MB of text are read
    assert time.monotonic() - started < 120


def test_the_engine_reads_the_bomb_out_of_core(bomb):
    # auto: 360 MB of text is over the in-memory threshold, so DuckDB reads it within the same 2 GB
    result, peak = run_cli("inspect", bomb, "--json", env={MEMORY_ENV: "400M"}, limit=2 * GB, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout)
    assert (figures["rows"], figures["columns"], figures["nonzeros"]) == (60_000_000, 3, 180_000_000)
    assert peak < 2 * GB


def test_the_bomb_within_a_set_limit_never_goes_over_it(bomb, tmp_path, data_dir):
    # the limit is on what the import builds; the interpreter and libraries come on top
    _, interpreter = run_cli("inspect", data_dir / "chess.dat.gz")
    limit = 400 << 20
    result, peak = run_cli("inspect", bomb, "--engine", "memory", env={MEMORY_ENV: "400M"}, limit=3 * GB,
                           timeout=300)
    one_line_error(result, "would need about", "400.0 MB")
    assert peak < interpreter + limit
    # gzip's stored size (ISIZE) set to a lie: the running count still stops it within the limit
    liar = tmp_path / "liar.dat.gz"
    content = bomb.read_bytes()
    liar.write_bytes(content[:-4] + (100).to_bytes(4, "little"))
    result, peak = run_cli("inspect", liar, env={MEMORY_ENV: "400M"}, limit=3 * GB, timeout=300)
    one_line_error(result, "too large for memory")
    assert peak < interpreter + limit


# --- linear time, whatever the line ---------------------------------------------------------------

def test_a_20_mb_token_is_refused_in_seconds(tmp_path):
    path = tmp_path / "token.dat"
    path.write_bytes(b"a" * (20 << 20))  # ~25 minutes at 7 s/MB before; a subprocess timeout guards a regression
    result, _ = run_cli("inspect", path, timeout=60)
    one_line_error(result, "token.dat", "line 1", "longer than 65,536 bytes")
    for options in (["--format", "transactions", "--delimiter", ","], ["--format", "pairs", "--no-header"]):
        result, _ = run_cli("inspect", path, *options, timeout=60)
        one_line_error(result, "token.dat")


def test_a_long_line_of_short_items_loads(tmp_path):
    path = tmp_path / "wide.dat"
    path.write_bytes(b" ".join(b"%d" % (i % 50_000) for i in range(2_000_000)) + b"\n1 2\n")  # 12 MB, one line
    data = dpdesk.load(path)
    assert data.n_rows == 2 and data.row_counts.tolist() == [50_000, 2]


def test_items_at_the_length_limit_load_and_one_byte_more_is_refused(tmp_path):
    from dpdesk.data.textio import MAX_FIELD_BYTES

    longest = b"x" * MAX_FIELD_BYTES
    path = tmp_path / "long.dat"
    path.write_bytes(b"a " + longest + b"\n" + longest + b"\n")
    assert dpdesk.load(path, format="transactions").column_counts.tolist() == [1, 2]
    path.write_bytes(b"a " + longest + b"y\n")
    with pytest.raises(DataError, match="line 1"):
        dpdesk.load(path, format="transactions")
