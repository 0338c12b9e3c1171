"""PostgreSQL as a source (``--sql postgresql://… --query …``), against a real server started for the module.

The server is a throwaway cluster (``initdb`` in a temporary folder, a Unix socket only, no
TCP), run as the ``postgres`` system user when the tests run as root (PostgreSQL refuses
root). ``scripts/system-deps.sh test`` installs the server where it is missing; where it
cannot be had the tests are skipped with the reason.
"""

import getpass
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import dpdesk
from dpdesk.cli import main
from dpdesk.engine.sql import load_sql
from dpdesk.errors import DataError
from dpdesk.tasks import CancelToken
from tests.conftest import DATA

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'psycopg[binary]')")


def _server_binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="module")
def server():
    """(URL, connect) of a fresh PostgreSQL server on a Unix socket, stopped after the module."""
    binaries = _server_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server binaries (initdb) on this machine")
    as_root = os.geteuid() == 0
    if as_root:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server")
    user = "postgres" if as_root else getpass.getuser()
    run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
    folder = Path(tempfile.mkdtemp(prefix="dpdesk-pg-"))
    os.chmod(folder, 0o777)
    data, socket_dir = folder / "data", folder / "socket"
    socket_dir.mkdir()
    os.chmod(socket_dir, 0o777)
    try:
        subprocess.run([*run_as, str(binaries / "initdb"), "-D", str(data), "-U", user, "--auth=trust",
                        "--encoding=UTF8", "--locale=C.UTF-8"], check=True, capture_output=True)
        subprocess.run([*run_as, str(binaries / "pg_ctl"), "-D", str(data), "-w", "-l", str(folder / "log"),
                        "-o", f"-c listen_addresses='' -k {socket_dir} -p 54329", "start"],
                       check=True, capture_output=True)
    except subprocess.CalledProcessError as error:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"could not start a PostgreSQL server: {error.stderr.decode(errors='replace')[:200]}")
    url = f"postgresql://{user}@/postgres?host={socket_dir}&port=54329"
    try:
        yield url
    finally:
        subprocess.run([*run_as, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def plays(server):
    """lastfm's (user, artist) pairs in a table, and the in-memory dataset they come from."""
    memory = dpdesk.load(DATA / "hetrec2011-lastfm-2k_user_artists.dat.gz", engine="memory")
    rows, cols = memory.matrix.nonzero()
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS plays")
        connection.execute("CREATE TABLE plays (user_id integer, artist text, weight double precision)")
        with connection.cursor().copy("COPY plays FROM STDIN") as copy:
            for r, c in zip(rows, cols):
                copy.write_row((int(r), str(memory.item_labels[c]), 1.0))
        connection.execute("CREATE TABLE people (id integer, name text, region text)")
        connection.execute("INSERT INTO people VALUES (1, 'Zoë', 'Île-de-France'), (2, 'Ana', NULL), "
                           "(3, 'Björn', 'Skåne')")
    return memory


def test_a_query_reads_as_the_file_does(server, plays):
    data = load_sql(server, "SELECT user_id, artist FROM plays ORDER BY user_id, artist", "pairs")
    assert (data.n_rows, data.nnz) == (plays.n_rows, plays.nnz)
    assert sorted(map(str, data.item_labels)) == sorted(map(str, plays.item_labels))
    order = np.argsort(np.asarray(data.item_labels, dtype=str))
    expected = np.argsort(np.asarray(plays.item_labels, dtype=str))
    assert np.array_equal(data.column_counts[order], plays.column_counts[expected])


def test_records_with_missing_values_and_non_ascii_text(server):
    data = load_sql(server, "SELECT name, region FROM people ORDER BY id", "records")
    labels = set(map(str, data.item_labels))
    assert {"name=Zoë", "region=Île-de-France", "region=Skåne"} <= labels
    assert data.n_rows == 3


def test_the_cli_releases_from_a_query(server, plays, tmp_path, dpdesk_home, capsys):
    out = tmp_path / "release"
    code = main(["release", "--sql", server, "--query", "SELECT user_id, artist FROM plays", "--format", "pairs",
                 "--mechanism", "lpa", "--epsilon", "1", "--bound", "20", "--items", "from-data",
                 "--items-are-public", "--dataset", "plays", "--out", str(out), "--report", "html"])
    assert code == 0, capsys.readouterr().err
    assert (out / "release.csv").is_file()


@pytest.mark.parametrize("url, query, message", [
    ("postgresql://nobody@/postgres?host=/nonexistent-socket-dir&port=5", "SELECT 1", "cannot connect to"),
    (None, "SELECT nothing FROM nowhere", "the query failed"),
    (None, "SELECT user_id AS who, artist FROM plays", "no column named 'person'"),
])
def test_bad_databases_and_queries_are_one_clear_line(server, plays, url, query, message):
    with pytest.raises(Exception) as refused:
        load_sql(url or server, query, "pairs", **({"person": "person"} if "person" in message else {}))
    assert isinstance(refused.value, (DataError, dpdesk.errors.ParameterError))
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_password_never_appears_in_a_message(server):
    with pytest.raises(DataError) as refused:
        load_sql("postgresql://someone:s3cret@/postgres?host=/nonexistent-socket-dir&port=5", "SELECT 1", "pairs")
    assert "s3cret" not in str(refused.value)


def test_cancel_stops_reading(server, plays):
    token = CancelToken()
    token.cancel()
    with pytest.raises(dpdesk.errors.Cancelled):
        load_sql(server, "SELECT user_id, artist FROM plays", "pairs", cancel=token)
