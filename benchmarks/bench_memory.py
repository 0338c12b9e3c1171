"""Peak memory of ``dpdesk inspect`` and of an ``lpa`` release, as a ratio to the data's CSR size
(issue 14: the target is at most 4×), and the gzip bomb of the issue.

Generates a FIMI file like the issue's (5 M rows, ~106 MB, ~26 M item occurrences over
41,270 items with Zipf-like popularity), then runs each command in a child process and
reads the child's peak resident memory (``getrusage(RUSAGE_CHILDREN).ru_maxrss``). The
ratio counts everything the process holds, the Python interpreter and libraries included
(measured alone too, and shown). Then the bomb: 60 M rows of ``1 2 3`` in 1.5 MB of
gzip, inspected and released, which must be refused or handled in under 2 GB.

Run: python benchmarks/bench_memory.py [--rows N] [--bound D] [--no-bomb] [--code DIR]
(``--code DIR`` measures another checkout of dpdesk, e.g. the code before this change.)
"""

from __future__ import annotations

import argparse
import gzip
import operator
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

MB = 1 << 20


def make_fimi(path: str, rows: int, columns: int = 41_270, mean_length: float = 5.7, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, columns + 1) ** 1.05
    cumulative = np.cumsum(weights) / weights.sum()
    with open(path, "w") as handle:
        for start in range(0, rows, 500_000):
            lengths = rng.geometric(1 / mean_length, size=min(500_000, rows - start))
            items = np.searchsorted(cumulative, rng.random(int(lengths.sum()))) + 1
            separators = np.full(items.size, " ", dtype=object)
            separators[np.cumsum(lengths) - 1] = " \n"
            handle.write("".join(map(operator.add, map(str, items.tolist()), separators.tolist())))


def make_bomb(path: str, rows: int = 60_000_000) -> None:
    block = b"1 2 3\n" * 100_000
    with gzip.open(path, "wb", compresslevel=1) as handle:
        for _ in range(rows // 100_000):
            handle.write(block)


def peak_of(args: list[str], env: dict, cwd: str | None = None) -> tuple[int, float, int, str]:
    """(peak RSS in bytes, seconds, exit status, last line of output) of ``python ARGS`` in a child."""
    wrapper = ("import resource, subprocess, sys, time\n"
               "t = time.perf_counter()\n"
               "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "last = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or ['']\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, time.perf_counter() - t,"
               " r.returncode, last[0][:150], sep='\\t')\n")
    result = subprocess.run([sys.executable, "-c", wrapper, sys.executable, *args], capture_output=True,
                            text=True, env=env, cwd=cwd, check=True)
    peak, seconds, status, last = result.stdout.rstrip("\n").split("\t")
    return int(peak), float(seconds), int(status), last


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--bound", type=int, default=10)
    parser.add_argument("--no-bomb", action="store_true")
    parser.add_argument("--code", help="measure the dpdesk in this folder instead (run from it)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.code:
        args.code = os.path.abspath(args.code)
    with tempfile.TemporaryDirectory() as folder:
        env["DPDESK_HOME"] = os.path.join(folder, "home")
        path = os.path.join(folder, "fimi5m.dat")
        t = time.perf_counter()
        make_fimi(path, args.rows)
        print(f"generated {args.rows:,} rows, {os.path.getsize(path) / MB:.0f} MB in {time.perf_counter() - t:.0f} s")
        csr = subprocess.run([sys.executable, "-c", "import sys, dpdesk; m = dpdesk.load(sys.argv[1]).matrix; "
                              "print(m.nnz, m.data.nbytes + m.indices.nbytes + m.indptr.nbytes)", path],
                             capture_output=True, text=True, env=env, cwd=args.code, check=True).stdout.split()
        nnz, csr_bytes = int(csr[0]), int(csr[1])
        base, _, _, _ = peak_of(["-c", "import dpdesk.cli, dpdesk, scipy.sparse, pandas"], env, args.code)
        print(f"CSR: {nnz:,} non-zeros, {csr_bytes / MB:.0f} MB; Python with dpdesk imported: {base / MB:.0f} MB")
        runs = {
            "inspect": ["-m", "dpdesk.cli", "inspect", path],
            f"lpa release (bound {args.bound})": [
                "-m", "dpdesk.cli", "release", path, "--mechanism", "lpa", "--epsilon", "1",
                "--bound", str(args.bound), "--items", "from-data", "--items-are-public", "--dataset", "fimi5m",
                "--out", os.path.join(folder, "out")],
        }
        for label, command in runs.items():
            peak, seconds, status, last = peak_of(command, env, args.code)
            ok = status == 0 and peak <= 4 * csr_bytes
            print(f"{label:<26} peak {peak / MB:6.0f} MB = {peak / csr_bytes:4.2f} × CSR "
                  f"({(peak - base) / csr_bytes:4.2f} × without the interpreter), {seconds:5.1f} s, "
                  f"exit {status} (target ≤ 4×: {'met' if ok else 'NOT met'})")
            if status:
                print(f"    {last}")
        os.remove(path)
        if not args.no_bomb:
            bomb = os.path.join(folder, "bomb.dat.gz")
            make_bomb(bomb)
            for label, command in (("inspect", ["inspect", bomb]),
                                   ("lpa release", ["release", bomb, "--mechanism", "lpa", "--epsilon", "1",
                                                    "--bound", "3", "--items", "from-data", "--items-are-public",
                                                    "--dataset", "bomb", "--out", os.path.join(folder, "bomb-out")])):
                peak, seconds, status, last = peak_of(["-m", "dpdesk.cli", *command], env, args.code)
                what = "refused" if status == 2 else ("handled" if status == 0 else f"exit {status}")
                print(f"gzip bomb ({os.path.getsize(bomb) / MB:.1f} MB, 60 M rows), {label}: {what} at a peak of "
                      f"{peak / MB:.0f} MB in {seconds:.1f} s (target < 2048 MB: "
                      f"{'met' if peak < 2 << 30 and status in (0, 2) else 'NOT met'})")
                if status:
                    print(f"    {last}")


if __name__ == "__main__":
    main()
