"""Rendering the reports of one release of retail.dat (16,470 items): public HTML and PDF,
internal HTML (matplotlib charts) and PDF, each as a multiple of loading the file.

Target: the internal report with its PDF costs at most a few loads (the release itself is
a fraction of one); the public PDF is a small fraction of a load.

Run: python benchmarks/bench_reports.py [--mechanism gs] [--bound 20]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import dpdesk
from dpdesk.report.internal import internal_report_html
from dpdesk.report.pdf import html_to_pdf
from dpdesk.report.public import public_report_html

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "retail.dat.gz"


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mechanism", default="gs")
    parser.add_argument("--bound", type=int, default=20)
    args = parser.parse_args()
    data, load = timed(dpdesk.load, DATA)
    data = dpdesk.declare(data, "from-data", items_are_public=True)   # retail's item ids are public
    release, run = timed(lambda: dpdesk.release(data, args.mechanism, epsilon=0.69, bound=args.bound))
    public, public_html = timed(public_report_html, release, {"release.csv": "0" * 64})
    public_pdf, public_pdf_time = timed(html_to_pdf, public)
    internal, internal_html = timed(internal_report_html, data, release)
    internal_pdf, internal_pdf_time = timed(html_to_pdf, internal)
    print(f"retail.dat loaded in {load:.2f} s; {args.mechanism} release in {run:.2f} s ({run / load:.2f} × load)")
    for name, seconds, size in (("public HTML", public_html, len(public)), ("public PDF", public_pdf_time, len(public_pdf)),
                                ("internal HTML", internal_html, len(internal)),
                                ("internal PDF", internal_pdf_time, len(internal_pdf))):
        print(f"  {name:<14} {seconds:6.2f} s  {seconds / load:5.2f} × load  {size / 1e6:6.2f} MB")


if __name__ == "__main__":
    main()
