"""Data of any size (issue 17): inspect and lpa / gs / dpsense-s releases from 1 M to 64 M rows.

Generates FIMI files shaped like PubMed (d = 40,000 items, mean basket ~8, longest 2,500;
row lengths log-normal, ~6% of rows over Δ = 20 holding ~30% of the cells; items Zipf-like)
and runs each command in a child process, printing time and peak memory (its RSS) for
the engine path from text and from Parquet (``dpdesk convert``), the in-memory path where it
fits, the speed-ups at 16 M rows and the growth exponent of time against rows.

    python benchmarks/bench_scale.py --rows 1M,4M,16M,64M --dir /work/cache/bench
    python benchmarks/bench_scale.py --rows 1M,4M --memory   # also the in-memory path

Files go to --dir (outside the repository: 64 M rows is ~2.9 GB of text) and are kept for
the next run; --clean removes them at the end.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

D, LONGEST, SEED = 40_000, 2_500, 17
BEFORE_16M_LPA = 94.0  # seconds: lpa on 16 M rows of text before the engine (the measurement)
COMMANDS = {
    "inspect": ["inspect", "{file}", "--json"],
    "lpa": ["release", "{file}", "--mechanism", "lpa", "--epsilon", "1", "--bound", "20"],
    "gs": ["release", "{file}", "--mechanism", "gs", "--epsilon", "1", "--bound", "20"],
    "dpsense-s": ["release", "{file}", "--mechanism", "dpsense-s", "--epsilon", "1"],
}


def generate(rows: int, path: Path) -> None:
    """A FIMI file of ``rows`` baskets (module notes), written a million rows at a time."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(SEED)
    labels = pa.array([str(i) for i in range(D)])
    weights = 1.0 / np.arange(1, D + 1) ** 0.6
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    partial = path.with_suffix(".part")
    with open(partial, "wb") as handle:
        for start in range(0, rows, 1 << 20):
            n = min(1 << 20, rows - start)
            lengths = np.clip(np.rint(np.exp(rng.normal(1.5, 1.0, n))), 1, LONGEST).astype(np.int64)
            if start == 0:
                lengths[0] = LONGEST
            ids = np.minimum(np.searchsorted(cdf, rng.random(int(lengths.sum()))), D - 1)
            offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
            lines = pc.binary_join(pa.ListArray.from_arrays(offsets, labels.take(pa.array(ids))), " ")
            lines = pc.binary_join_element_wise(lines, pa.scalar(""), "\n")
            buffers = lines.buffers()
            bounds = np.frombuffer(buffers[1], dtype=np.int32)[lines.offset: lines.offset + n + 1]
            handle.write(memoryview(buffers[2])[bounds[0]:bounds[-1]])
    partial.rename(path)


def run(args: list[str], home: Path) -> tuple[float, int, bool]:
    """(seconds, peak RSS in bytes, succeeded) of ``dpdesk ARGS`` in a child process."""
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter(); r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
            "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, "
            "r.returncode, file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "dpdesk.cli", *args],
                            capture_output=True, text=True, env={**os.environ, "DPDESK_HOME": str(home)})
    seconds, peak, status = result.stderr.strip().splitlines()[-1].split()
    if int(status) != 0:
        print("   ", " ".join(args[:3]), "failed:", result.stderr.strip().splitlines()[-2:], file=sys.stderr)
    return float(seconds), int(peak), int(status) == 0


def rows_option(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip().upper()
        factor = 1_000_000 if part.endswith("M") else 1_000 if part.endswith("K") else 1
        out.append(int(float(part.rstrip("MK")) * factor))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="1M,4M,16M,64M")
    parser.add_argument("--dir", default="/work/cache/bench")
    parser.add_argument("--memory", action="store_true", help="also time the in-memory path (needs ~10 GB at 16 M)")
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--clean", action="store_true", help="remove the generated files at the end")
    parser.add_argument("--repeats", type=int, default=1,
                        help="run each command this many times and report the median time (and the largest peak): "
                             "a virtual machine's disk makes single runs vary by ±15%%")
    args = parser.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    table: dict = {}
    for rows in rows_option(args.rows):
        text = folder / f"scale-{rows}.dat"
        if not text.exists():
            started = time.perf_counter()
            generate(rows, text)
            print(f"generated {text} ({text.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - started:.1f} s")
        parquet = folder / f"scale-{rows}.parquet"
        if not parquet.exists():
            seconds, peak, ok = run(["convert", str(text), str(parquet)], folder)
            table[(rows, "convert", "text")] = (seconds, peak, ok)
        # auto is what a steward gets: in memory when the file fits with room for a release, else DuckDB
        paths = [("auto", "text", text), ("auto", "parquet", parquet), ("duckdb", "text", text),
                 ("duckdb", "parquet", parquet)]
        if args.memory:
            paths.insert(0, ("memory", "text", text))
        for engine, kind, path in paths:
            for command in commands:
                runs = []
                for _ in range(max(1, args.repeats)):
                    with tempfile.TemporaryDirectory(dir=folder) as home:
                        argv = [a.format(file=path) for a in COMMANDS[command]] + ["--engine", engine]
                        if command != "inspect":
                            argv += ["--items", "from-data", "--items-are-public", "--out", str(Path(home) / "out"),
                                     "--dataset", f"scale-{rows}"]
                        runs.append(run(argv, Path(home)))
                times = sorted(r[0] for r in runs)
                table[(rows, command, f"{engine}/{kind}")] = (times[len(times) // 2], max(r[1] for r in runs),
                                                               all(r[2] for r in runs))
                seconds, peak, ok = table[(rows, command, f"{engine}/{kind}")]
                print(f"{rows:>11,} rows  {command:<10} {engine}/{kind:<8} {seconds:8.1f} s  {peak / 2**30:6.2f} GB"
                      + ("" if ok else "  FAILED"), flush=True)
    sizes = sorted({r for r, _, _ in table})
    print("\ngrowth exponent of time against rows (log-log slope, smallest to largest size; target ≤ 1.1):")
    for command in commands:
        for path in ("auto/text", "auto/parquet", "duckdb/text", "duckdb/parquet", "memory/text"):
            points = [(r, table[(r, command, path)][0]) for r in sizes if (r, command, path) in table
                      and table[(r, command, path)][2]]
            if len(points) >= 2:
                (r0, t0), (r1, t1) = points[0], points[-1]
                print(f"  {command:<10} {path:<15} {math.log(t1 / t0) / math.log(r1 / r0):.2f}")
    print("\nagainst the figures measured before the engine (issue 17: 16 M rows, lpa from text 94 s, 10.1 GB):")
    for path, target in (("auto/text", 4), ("auto/parquet", 20), ("duckdb/text", 4), ("duckdb/parquet", 20)):
        got = table.get((16_000_000, "lpa", path))
        if got and got[2]:
            print(f"  16,000,000 rows lpa {path:<15} {BEFORE_16M_LPA / got[0]:5.1f}× faster (target ≥ {target}×), "
                  f"{got[1] / 2**30:.2f} GB")
    for rows in sizes:
        peaks = [(key[1], key[2], value[1]) for key, value in table.items() if key[0] == rows and value[2]]
        if rows >= 64_000_000 and peaks:
            command, path, peak = max(peaks, key=lambda p: p[2])
            print(f"  {rows:,} rows: largest peak {peak / 2**30:.2f} GB ({command}, {path}; target ≤ 4 GB)")
    for rows in sizes:
        base = table.get((rows, "lpa", "memory/text"))
        for path in ("duckdb/text", "duckdb/parquet"):
            other = table.get((rows, "lpa", path))
            if base and other and base[2] and other[2]:
                print(f"  {rows:,} rows lpa: {path} is {base[0] / other[0]:.1f}× faster than memory/text")
    if args.clean:
        for rows in sizes:
            for suffix in (".dat", ".parquet"):
                (folder / f"scale-{rows}{suffix}").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
