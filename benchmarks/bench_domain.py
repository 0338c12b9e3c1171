"""A declared item domain of a million labels must not slow a release down (issue 13).

On a kosarak-sized transaction file (990,002 rows, ~41,000 items, ~8 million items in all)
this measures, in one run:

* load + secure ``lpa`` release with the file's own labels declared public (``from-data``):
  today's path, the reference;
* the same with a declared label file of 1,000,000 labels (every id 1..1,000,000; the data's
  items are among them): reading the list, projecting the data onto it, releasing 10⁶ counts.

and prints the ratio (target ≤ 1.5). The release files are not written (that is the
export's cost, proportional to the number of published counts, and measured elsewhere).

Run: python benchmarks/bench_domain.py [--rows N] [--labels N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import dpdesk
from dpdesk.data.domain import DomainDeclaration, declared_domain, project, public_data_domain

from bench_load import make_file


def timed(function):
    """CPU seconds of ``function`` (robust on a shared machine) and its result."""
    start = time.process_time()
    result = function()
    return time.process_time() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=990_002)
    parser.add_argument("--labels", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        data_path = os.path.join(folder, "kosarak-like.dat")
        make_file(data_path, args.rows)
        labels_path = os.path.join(folder, "items.txt")
        with open(labels_path, "w") as handle:
            handle.write("\n".join(str(i) for i in range(1, args.labels + 1)) + "\n")

        def public_labels():
            data = dpdesk.load(data_path)
            declared = project(data, public_data_domain(data))
            return dpdesk.release(declared, "lpa", epsilon=1.0, bound=20)

        def label_file():
            domain = declared_domain(DomainDeclaration("list", path=labels_path))
            data = dpdesk.load(data_path)
            declared = project(data, domain)
            return dpdesk.release(declared, "lpa", epsilon=1.0, bound=20)

        public_labels()  # warm the page cache and numpy
        reference, first = timed(public_labels)
        declared, second = timed(label_file)
        read, domain = timed(lambda: declared_domain(DomainDeclaration("list", path=labels_path)))
        print(f"rows {args.rows:,}; items in the data {first.values.size:,}; declared labels {second.values.size:,}")
        print(f"load + release, the file's own labels (public):  {reference:6.2f} s")
        print(f"load + release, a declared list of {args.labels:,} labels: {declared:6.2f} s "
              f"(reading the list alone: {read:.2f} s)")
        print(f"ratio: {declared / reference:.2f} (CPU time; target ≤ 1.5)")


if __name__ == "__main__":
    main()
