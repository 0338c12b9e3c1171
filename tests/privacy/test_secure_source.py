"""The secure source tested for what it is (issue 22): its bits are the operating system's, it never
repeats itself, fresh processes never agree, and the release paths use it and nothing else —
while a seeded source can never be exported."""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk import cli
from dpdesk.data.domain import DomainDeclaration
from dpdesk.errors import ExportError, LedgerError
from dpdesk.privacy import randomness
from dpdesk.privacy.ledger import Ledger
from dpdesk.privacy.randomness import SecureRandom, SeededRandom, resolve
from dpdesk.workflow import export_release, secure_release

from tests.secure_run import secure_run


class ByteStream:
    """A stand-in for ``os.urandom``: SHA-256 in counter mode from a key, and the sizes asked for."""

    def __init__(self, key: bytes = b"stream"):
        self.key, self.counter, self.buffer, self.requests = key, 0, b"", []

    def __call__(self, size: int) -> bytes:
        self.requests.append(size)
        while len(self.buffer) < size:
            self.buffer += hashlib.sha256(self.key + self.counter.to_bytes(8, "little")).digest()
            self.counter += 1
        out, self.buffer = self.buffer[:size], self.buffer[size:]
        return out


@pytest.mark.parametrize("count", [1, 7, 8192, 8193, 30_000])
def test_words_are_the_operating_systems_bytes(count, monkeypatch):
    """Every word is 8 bytes os.urandom returned, in order, and os.urandom is asked for exactly
    8 bytes per word (also past the 64 KiB chunks): no other generator is mixed in."""
    stream = ByteStream()
    monkeypatch.setattr(os, "urandom", stream)
    words = SecureRandom().words(count)
    assert sum(stream.requests) == 8 * count
    assert np.array_equal(words, np.frombuffer(ByteStream()(8 * count), dtype=np.uint64))


def test_words_never_repeat():
    """2·10⁵ words, in one call and in many: a repeated 64-bit word has probability below 10⁻⁹."""
    source = SecureRandom()
    one_call = source.words(200_000)
    many_calls = np.concatenate([source.words(1) for _ in range(2000)] + [source.words(3) for _ in range(2000)])
    together = np.concatenate([one_call, many_calls])
    assert np.unique(together).size == together.size


def test_two_fresh_processes_never_give_the_same_words():
    """A generator seeded the same way in every process (a fixed seed, or one derived from the time at
    second resolution) would give equal words; the OS never does (probability 2⁻²⁵⁶)."""
    program = "from dpdesk.privacy.randomness import SecureRandom; print(SecureRandom().words(4).tobytes().hex())"
    outputs = [subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout
               for _ in range(2)]
    assert len(outputs[0].strip()) == 64 and outputs[0] != outputs[1]


# --- the release paths --------------------------------------------------------------------------

LABELS = [f"item{j}" for j in range(12)]


def incidence(people: int = 80) -> dpdesk.Dataset:
    rng = np.random.default_rng(4)
    dense = (rng.random((people, 12)) < 0.3).astype(np.int64)
    dense[np.arange(people), np.arange(people) % 12] = 1
    return dpdesk.from_matrix(sp.csr_matrix(dense), LABELS, name="clinic")


def cells() -> dpdesk.CellCounts:
    rng = np.random.default_rng(5)
    indices = np.sort(rng.choice(300, size=40, replace=False))
    return dpdesk.from_cells(indices, rng.integers(1, 50, size=40), 300, name="table")


SETTINGS = {"lpa": {"bound": 3}, "alpa": {}, "gs-r": {"bound": 3}, "gs-s-row": {"bound": 3}, "gs-s-col": {"bound": 3},
            "gs": {"bound": 3}, "ahp": {"bound": 3, "small_counts": "median", "threshold": "adaptive"},
            "fpa": {"bound": 3, "rho": 3}, "dpsense": {}, "dpsense-s": {},
            "diff": {"index": "uniform"}, "geometric": {}, "filter": {"threshold": 2}, "filter2": {"threshold": 2},
            "threshold": {"target_size": 20}, "priority": {"size": 5}, "filter-threshold": {"threshold": 1, "tau": 3},
            "filter-priority": {"threshold": 1, "size": 5}, "dyadic": {"method": "filter", "threshold": 2},
            "sketch": {"width": 8, "depth": 2}}


def releasable():
    ids = [m.id for m in dpdesk.mechanisms() if m.releasable]
    assert set(ids) == set(SETTINGS), "a new mechanism needs its settings here (and its mutants, tests/mutants)"
    return ids


def declared(mechanism_id):
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    if mechanism.data_kind == "cells":
        return cells()
    return dpdesk.declare(incidence(), "from-data", items_are_public=True)


def published(release):
    """What a release publishes besides its metadata: the values, or the summary's cells."""
    if release.values is not None:
        return np.asarray(release.values).tobytes()
    return b"".join(np.asarray(x).tobytes() for x in (release.cells.indices, release.cells.values,
                                                        release.cells.weights if release.cells.weights is not None
                                                        else np.zeros(0))) + str(release.cells.info).encode()


@pytest.fixture
def forbid_other_randomness(monkeypatch):
    """Call it to make numpy's generators and the ``random`` module refuse to be used (from then on,
    in this test: a release must not touch them)."""
    def refuse(*args, **kwargs):
        raise AssertionError("a release drew from a generator other than its RandomSource")

    def forbid():
        for name in ("default_rng", "RandomState", "random", "rand", "randn", "randint", "integers", "choice",
                     "shuffle", "permutation", "normal", "laplace", "uniform", "seed", "bytes"):
            if hasattr(np.random, name):
                monkeypatch.setattr(np.random, name, refuse)
        for name in ("random", "randint", "randrange", "getrandbits", "choice", "choices", "shuffle", "sample",
                     "uniform", "seed", "randbytes"):
            monkeypatch.setattr(random, name, refuse)

    return forbid


@pytest.mark.parametrize("mechanism_id", sorted(SETTINGS))
def test_a_secure_release_is_a_function_of_os_urandom_alone(mechanism_id, monkeypatch, forbid_other_randomness):
    """With os.urandom replaced by a fixed byte stream, a secure release comes out the same twice (no
    other source of randomness — numpy, random, the clock — enters it), and differently from another
    stream (its randomness is those bytes)."""
    assert mechanism_id in releasable()
    data = declared(mechanism_id)
    forbid_other_randomness()
    outputs = []
    for key in (b"first", b"first", b"second"):
        monkeypatch.setattr(os, "urandom", ByteStream(key))
        release = secure_run(data, mechanism_id, epsilon=1.0, **SETTINGS[mechanism_id])
        assert release.exploration is False and release.randomness == SecureRandom.description
        outputs.append(published(release))
    assert outputs[0] == outputs[1]
    assert outputs[0] != outputs[2]


class Counted:
    """Counts the words every SecureRandom draws; any seeded draw fails the test."""

    def __init__(self, monkeypatch):
        self.words = 0
        original = SecureRandom.words
        counter = self

        def secure_words(self, count):
            counter.words += int(count)
            return original(self, count)

        def seeded_words(self, count):
            raise AssertionError("a release drew from a seeded source")

        monkeypatch.setattr(SecureRandom, "words", secure_words)
        monkeypatch.setattr(SeededRandom, "words", seeded_words)


@pytest.mark.parametrize("mechanism_id", ["gs", "dpsense-s", "filter-priority"])
def test_the_api_release_draws_only_from_the_secure_source(mechanism_id, monkeypatch, forbid_other_randomness):
    data = declared(mechanism_id)
    forbid_other_randomness()
    counted = Counted(monkeypatch)
    release = secure_run(data, mechanism_id, epsilon=1.0, **SETTINGS[mechanism_id])
    assert counted.words > 0 and not release.exploration


def test_the_workflow_draws_only_from_the_secure_source(monkeypatch, dpdesk_home, forbid_other_randomness):
    """``secure_release``, with private discovery of the items first: both draw from the OS only. The
    counts (about 250) lie far above the discovery threshold (τ = 39, noise scale 5): every item is
    found, whatever the noise (a miss has probability below 10⁻¹⁵)."""
    data = incidence(800)
    forbid_other_randomness()
    counted = Counted(monkeypatch)
    items = DomainDeclaration("discovered", delta=1e-3, share=0.3, bound=3)
    release, files = secure_release(data, "lpa", 2.0, {"bound": 3}, dataset="clinic", items=items,
                                    ledger=Ledger.open())
    assert counted.words > 0 and not release.exploration
    assert [step["step"] for step in release.budget_split][0].startswith("discover")


@pytest.mark.parametrize("items", [["--items", "from-data", "--items-are-public"],
                                   ["--items", "discover", "--delta", "1e-3", "--discover-share", "0.3"]])
def test_the_command_line_release_draws_only_from_the_secure_source(items, tmp_path, monkeypatch, dpdesk_home,
                                                                     data_dir, forbid_other_randomness):
    forbid_other_randomness()
    counted = Counted(monkeypatch)
    out = tmp_path / "release"
    code = cli.main(["release", str(data_dir / "chess.dat.gz"), "--mechanism", "gs", "--epsilon", "1",
                     "--bound", "10", *items, "--out", str(out)])
    assert code == 0
    assert counted.words > 0
    assert '"mode": "release"' in (out / "release.json").read_text(encoding="utf-8")


# --- a seeded source is never exportable --------------------------------------------------------

def test_seeded_sources_are_never_secure():
    assert resolve(None).secure and isinstance(resolve(None), SecureRandom)
    for rng in (7, np.int64(7), np.random.default_rng(7), SeededRandom(np.random.default_rng(1))):
        source = resolve(rng)
        assert source.secure is False and isinstance(source, SeededRandom)
        assert "not exportable" in source.description
    assert SeededRandom.secure is False and SecureRandom.secure is True
    assert randomness.RandomSource.secure is False


@pytest.mark.parametrize("mechanism_id", sorted(SETTINGS))
def test_a_seeded_release_can_never_be_exported_or_recorded(mechanism_id, tmp_path, dpdesk_home):
    data = declared(mechanism_id)
    release = dpdesk.release(data, mechanism_id, epsilon=1.0, rng=7, **SETTINGS[mechanism_id])
    assert release.exploration is True and "seeded" in release.randomness
    assert release.report["mode"].startswith("exploration")
    with pytest.raises(ExportError, match="exploration mode"):
        export_release(release, data, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(LedgerError, match="exploration mode"):
        Ledger.open().record(release, dpdesk.api.content_fingerprint(data), {})
