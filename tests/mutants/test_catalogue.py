"""The mutant catalogue stays in step with the code (the mutants themselves run in tests/mutants/run.py,
after the main suite in CI): every replacement still matches exactly once, every listed test
exists, and every releasable mechanism and privacy part has its mutants."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dpdesk
from tests.mutants.catalogue import MUTANTS
from tests.mutants.run import ROOT, stale

PARTS = {"randomness", "bounding", "discovery", "ledger", "export", "noise", "exact", "release path", "engine", "domain",
         "stand-in", "recommend", "records", "margins"}
# issue 22: the four bugs the suite missed, and the two it caught only by accident, with the test file
# written to catch each
ISSUE = {"gs-sample-noise-1-over-eps": "test_budget_claims.py", "diff-alpha-times-eps": "test_budget_claims.py",
         "sparse-estimates-1-over-eps": "test_budget_claims.py", "secure-random-fixed-seed": "test_secure_source.py",
         "gs-groups-by-true-counts": "test_guards.py", "secure-random-repeats-words": "test_secure_source.py"}


def test_every_replacement_matches_the_code_exactly_once():
    assert stale(MUTANTS, ROOT) == []


def test_mutants_are_named_once_change_the_code_and_list_their_tests():
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names))
    assert len(MUTANTS) >= 23
    for m in MUTANTS:
        assert m.edits and m.tests and m.covers and m.bug, m.name
        assert all(edit.old != edit.new for edit in m.edits), m.name


def test_every_listed_test_exists():
    nodes = sorted({node for m in MUTANTS for node in m.tests})
    for node in nodes:
        assert (ROOT / node.split("::")[0]).is_file(), node
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                *nodes], cwd=ROOT, capture_output=True, text=True)
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    found = {line.strip() for line in collected.stdout.splitlines() if "::" in line}
    assert set(nodes) <= found, sorted(set(nodes) - found)


def test_every_mechanism_and_privacy_part_has_mutants():
    covered = {part for m in MUTANTS for part in m.covers}
    releasable = {m.id for m in dpdesk.mechanisms() if m.releasable}
    assert releasable <= covered, f"no mutants for {sorted(releasable - covered)}: see tests/mutants/README.md"
    assert PARTS <= covered, sorted(PARTS - covered)
    assert covered <= releasable | PARTS, sorted(covered - releasable - PARTS)


def test_the_issue_mutants_are_caught_by_tests_written_for_them():
    by_name = {m.name: m for m in MUTANTS}
    for name, test_file in ISSUE.items():
        assert name in by_name, name
        assert all(Path(node.split("::")[0]).name == test_file for node in by_name[name].tests), name
