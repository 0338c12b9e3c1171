"""Plant every curated privacy mutant in a scratch copy of the repository and check the tests catch it.

    python tests/mutants/run.py [--only NAME ...] [--jobs N] [--timeout SECONDS] [--list]

For each mutant of :mod:`tests.mutants.catalogue`: apply its replacements to a scratch copy
(a temporary folder; the working tree is never touched), run ``pytest -x`` on the tests it
lists, then restore the copy. A mutant is *caught* when a listed test fails with an
assertion (``AssertionError``, or pytest's ``Failed``: "DID NOT RAISE", a pytest-timeout
limit). It *survives* when the tests pass; a failure with any other exception is a
*crash* — the bug was noticed only by accident — and a run that cannot collect its tests
is an *error*. The script prints a table (mutant, result, caught by, seconds) and the
mutation score, and exits 1 unless every mutant was caught.

Before anything runs, every replacement's old text must occur exactly once in its file:
a mutant whose code moved fails loudly rather than testing nothing.
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.mutants.catalogue import MUTANTS, Mutant  # noqa: E402

CLEAN_FAILURES = ("AssertionError", "Failed")  # pytest.fail, "DID NOT RAISE", pytest-timeout's limit
TEST_LIMIT = 120  # seconds per test under a mutant (each takes under 30): a bug that makes one hang fails it


@dataclass
class Outcome:
    mutant: Mutant
    result: str  # caught, survived, crashed, error
    caught_by: str
    detail: str
    seconds: float


def stale(mutants, root: Path) -> list[str]:
    """Replacements whose old text does not occur exactly once in the tree at ``root``."""
    problems = []
    for m in mutants:
        for edit in m.edits:
            path = root / edit.path
            count = path.read_text(encoding="utf-8").count(edit.old) if path.is_file() else -1
            if count != 1:
                where = "missing file" if count < 0 else f"found {count} times"
                problems.append(f"{m.name}: {edit.path}: {where}: {edit.old[:70]!r}")
    return problems


def tracked_files(root: Path) -> list[str]:
    """The repository's files as git sees them (tracked and new, not ignored)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout
    return [name for name in listed.decode("utf-8").split("\0") if name and (root / name).is_file()]


def scratch_copy(root: Path, target: Path) -> Path:
    """A copy of the repository's source, tests and data in ``target`` (no .git, no virtual environment)."""
    try:
        names = tracked_files(root)
    except (OSError, subprocess.CalledProcessError):
        names = None
    if names is None:  # no git: copy the tree without the bulky or generated folders
        shutil.copytree(root, target, ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", "build", "dist", "*.egg-info"))
        return target
    for name in names:
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, destination)
    return target


def environment(copy: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a mutated module is never read back from a stale .pyc
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    return env


def check_import(copy: Path) -> None:
    """The copy's dpdesk must be the one imported (not the editable install of the working tree)."""
    found = subprocess.run([sys.executable, "-c", "import dpdesk; print(dpdesk.__file__)"], cwd=copy,
                           env=environment(copy), capture_output=True, text=True, check=True).stdout.strip()
    if not Path(found).resolve().is_relative_to(copy.resolve()):
        raise SystemExit(f"mutants: the scratch copy imports dpdesk from {found}, not from {copy}")


def classify(code: int, report: Path, output: str) -> tuple[str, str, str]:
    """(result, the first failing test, its exception and message) from pytest's exit code and its
    JUnit XML report."""
    failures = []
    if report.is_file():
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            for element in case:
                if element.tag in ("failure", "error"):
                    node = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
                    failures.append((element.tag, node, element.get("message") or ""))
    if code == 0:
        return "survived", "", ""
    if code == 1 and failures:
        kind, node, message = failures[0]
        exception = message.split(":", 1)[0].strip().rsplit(".", 1)[-1]
        rewritten = message.startswith("assert ")  # a bare ``assert`` reports its expression only
        if kind == "failure" and (rewritten or exception in CLEAN_FAILURES):
            return "caught", node, message
        return "crashed", node, message
    last = output.strip().splitlines()[-1] if output.strip() else ""
    return "error", "", f"pytest exit {code}: {last}"


def run_mutant(m: Mutant, copy: Path, timeout: float) -> Outcome:
    originals = {}
    start = time.perf_counter()
    try:
        for edit in m.edits:
            path = copy / edit.path
            current = path.read_text(encoding="utf-8")
            originals.setdefault(path, current)
            if current.count(edit.old) != 1:
                raise RuntimeError(f"{m.name}: {edit.path} no longer holds the text to replace exactly once")
            path.write_text(current.replace(edit.old, edit.new), encoding="utf-8")
        report = copy / ".mutant-report.xml"
        report.unlink(missing_ok=True)
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                   f"--timeout={TEST_LIMIT}", *m.tests]
        try:
            done = subprocess.run(command, cwd=copy, env=environment(copy), capture_output=True, text=True,
                                  timeout=timeout)
            result, node, detail = classify(done.returncode, report, done.stdout + done.stderr)
        except subprocess.TimeoutExpired:
            result, node, detail = "error", "", f"no result within {timeout:.0f} s"
    finally:
        for path, text in originals.items():
            path.write_text(text, encoding="utf-8")
    return Outcome(m, result, node, detail, time.perf_counter() - start)


def table(outcomes: list[Outcome]) -> str:
    width = max(len(o.mutant.name) for o in outcomes)
    lines = [f"{'mutant':<{width}}  {'result':<8}  {'seconds':>7}  caught by"]
    for o in outcomes:
        test = o.caught_by.replace("tests/", "", 1) if o.caught_by else o.detail
        lines.append(f"{o.mutant.name:<{width}}  {o.result:<8}  {o.seconds:7.1f}  {test}")
        if o.result != "caught" and o.detail and o.caught_by:
            lines.append(f"{'':<{width}}  {'':<8}  {'':>7}  {o.detail[:150]}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutants")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="mutants run at once, each in its own scratch copy (default: 2 on 2+ cores)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per mutant (default 600)")
    parser.add_argument("--list", action="store_true", help="list the mutants and their tests")
    args = parser.parse_args(argv)

    mutants = list(MUTANTS)
    if args.only:
        unknown = sorted(set(args.only) - {m.name for m in mutants})
        if unknown:
            parser.error("unknown mutant(s): " + ", ".join(unknown))
        mutants = [m for m in mutants if m.name in args.only]
    if args.list:
        for m in mutants:
            print(f"{m.name}: {m.bug}\n    " + "\n    ".join(m.tests))
        return 0
    problems = stale(mutants, ROOT)
    if problems:
        print("mutants: these replacements no longer match the code exactly once (update tests/mutants/"
              "catalogue.py with the code they were planted in):\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1

    started = time.perf_counter()
    jobs = max(1, min(args.jobs, len(mutants)))
    with tempfile.TemporaryDirectory(prefix="dpdesk-mutants-") as scratch:
        copies: queue.Queue = queue.Queue()
        for j in range(jobs):
            copy = scratch_copy(ROOT, Path(scratch) / f"copy{j}")
            check_import(copy)
            copies.put(copy)
        lock = threading.Lock()

        def work(m: Mutant) -> Outcome:
            copy = copies.get()
            try:
                outcome = run_mutant(m, copy, args.timeout)
            finally:
                copies.put(copy)
            with lock:
                print(f"  {outcome.result:<8} {outcome.seconds:6.1f} s  {m.name}", flush=True)
            return outcome

        print(f"mutants: {len(mutants)} mutants, {jobs} at a time, in {scratch}", flush=True)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            outcomes = list(pool.map(work, mutants))
    caught = sum(o.result == "caught" for o in outcomes)
    print()
    print(table(outcomes))
    print(f"\nmutation score: {caught}/{len(outcomes)} caught ({100.0 * caught / len(outcomes):.0f}%), "
          f"{time.perf_counter() - started:.0f} s in all")
    for kind in ("survived", "crashed", "error"):
        names = [o.mutant.name for o in outcomes if o.result == kind]
        if names:
            print(f"{kind}: {', '.join(names)}")
    return 0 if caught == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
