"""No true value reaches a public file.

A crafted dataset whose true counts and statistics are distinctive numbers (7919, 104729,
five-digit primes, 110,017 people, one person with 1,237 items, …) is released through the
same workflow as the CLI, with every registered releasable mechanism; then none of those
numbers — in any of the ways the reports format numbers — may appear in the public report
(HTML and the PDF's text), the release metadata (release.json without its noisy values, and
the metadata inside release.parquet) or the ledger entry's fields. The fingerprint (a
function of the true data) must not appear in public files either. The internal report, by
contrast, must show them: that proves the search would find them.

The values are large and unusual on purpose: a short number (say 173) may turn up in a
public figure by coincidence (a privately chosen θ gives "95% within ±173"), so counts
below 1000 (the wide person's items, held by them alone) are not searched for.
"""

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk.privacy.ledger import Ledger
from dpdesk.workflow import INTERNAL_REPORT_FILE, INTERNAL_REPORT_FILES, release_to_files
from tests.report.test_public_report import without_example

N_ROWS = 110_017
ROWS_WITH_ITEMS = 104_729
N_ITEMS = 2000
DISTINCT_ITEMS = 40  # items 0..39 have the distinctive counts
WIDE_ROW_ITEMS = 1237  # the one person far above the declared bound
BOUND = 12
# values for required parameters that have no default (public, declared values)
DECLARED = {"bound": BOUND, "index": "uniform"}
# the sparse-domain summaries need one of several settings (declared, public values)
CELL_SETTINGS = {
    "filter": {"threshold": 5}, "filter2": {"threshold": 5}, "threshold": {"tau": 20.0}, "priority": {"size": 20},
    "filter-threshold": {"threshold": 5, "tau": 20.0}, "filter-priority": {"threshold": 5, "size": 20},
    "dyadic": {"threshold": 5},
}


def distinct_primes(low, high, count):
    candidates = np.arange(low, high)
    sieve = np.ones(high, dtype=bool)
    sieve[:2] = False
    for p in range(2, int(high ** 0.5) + 1):
        if sieve[p]:
            sieve[p * p::p] = False
    primes = candidates[sieve[candidates]]
    assert primes.size >= count
    return primes[:count]


def crafted_incidence():
    """Item 0 has 7919 people, item 1 has 104729, items 2..39 five-digit prime counts (people
    1..104729 hold them in contiguous, wrapping runs); person 0 holds items 40..1276 (1,237
    items, each only theirs); items 1277.. nobody; 5,288 people hold nothing."""
    counts = np.concatenate([[7919, 104_729], distinct_primes(10_007, 20_000, DISTINCT_ITEMS - 2)])
    rows = [np.arange(1, 7920), np.arange(1, ROWS_WITH_ITEMS + 1), np.zeros(WIDE_ROW_ITEMS, int)]
    cols = [np.zeros(7919, int), np.ones(ROWS_WITH_ITEMS, int), np.arange(DISTINCT_ITEMS, DISTINCT_ITEMS + WIDE_ROW_ITEMS)]
    start = 0
    for item in range(2, DISTINCT_ITEMS):
        rows.append(1 + (start + np.arange(counts[item])) % ROWS_WITH_ITEMS)
        cols.append(np.full(counts[item], item))
        start += int(counts[item])
    matrix = sp.csr_matrix((np.ones(sum(r.size for r in rows)), (np.concatenate(rows), np.concatenate(cols))),
                           shape=(N_ROWS, N_ITEMS))
    data = dpdesk.from_matrix(matrix, [f"product-{j:04d}" for j in range(N_ITEMS)], name="crafted")
    assert np.array_equal(data.column_counts[:DISTINCT_ITEMS], counts)
    assert data.summary()["max_row_count"] == WIDE_ROW_ITEMS and data.n_rows == N_ROWS
    # the product list is public (a catalogue), so it is declared from the file
    return dpdesk.declare(data, "from-data", items_are_public=True)


@pytest.fixture(scope="module")
def crafted():
    return crafted_incidence()


@pytest.fixture(scope="module")
def forbidden(crafted):
    return true_values(crafted)


def number_forms(value) -> set[str]:
    """The ways a report may print a number."""
    forms = set()
    if float(value).is_integer():
        v = int(value)
        forms |= {str(v), f"{v:,}", f"{v:,}".replace(",", " "), f"{v:.1f}", f"{v:,.1f}"}
    else:
        v = float(value)
        for spec in (".2f", ".3f", ".4f", ".3g", ".4g", ".6g", ",.2f", ",.6g", ".6f", "", ".5g"):
            forms.add(format(v, spec))
        forms.add(repr(v))
    # short forms (under three significant digits, or a rounded float printed as a
    # three-digit whole number) would match public figures by coincidence
    return {f for f in forms if len(f.replace(",", "").replace(".", "").lstrip("0")) >= 3
            and ("." in f or len(f.replace(",", "").replace(" ", "")) >= 4 or float(value).is_integer())}


class Forbidden:
    """Printed forms of true values, searched for in one pass as whole-number tokens."""

    def __init__(self, values: dict[str, set[str]], fingerprint: str):
        self.name_of = {form: name for name, forms in values.items() for form in forms}
        alternatives = "|".join(re.escape(f) for f in sorted(self.name_of, key=len, reverse=True))
        # not part of a longer number, word or hash
        self.pattern = re.compile(r"(?<![\w.,])(?:" + alternatives + r")(?![\w]|[.,]\d)")
        self.fingerprint = fingerprint


def true_values(data) -> Forbidden:
    """Every true count and statistic of incidence data, in all printed forms."""
    summary = data.summary()
    row_counts = data.row_counts
    values = {f"count of {data.item_labels[j]}": int(c) for j, c in enumerate(data.column_counts) if c >= 1000}
    values.update({f"summary {k}": v for k, v in summary.items() if k != "columns"})
    values["total count"] = int(data.column_counts.sum())
    values["people above the bound"] = int((row_counts > BOUND).sum())
    values["items removed by truncation"] = int(np.maximum(row_counts - BOUND, 0).sum())
    return Forbidden({name: number_forms(v) for name, v in values.items()}, data.fingerprint)


def leaks(text: str, forbidden: Forbidden) -> list[str]:
    found = [f"{forbidden.name_of[m.group(0)]} as {m.group(0)!r}" for m in forbidden.pattern.finditer(text)]
    if forbidden.fingerprint in text or forbidden.fingerprint[:12] in text:
        found.append("the dataset fingerprint")
    return found


def mechanism_cases(kind):
    return [pytest.param(m.id, id=m.id) for m in dpdesk.mechanisms(kind) if m.releasable]


def declared_params(mechanism, settings=None) -> dict:
    params = dict(settings or {})
    for p in mechanism.params:
        if p.name in params:
            continue
        if p.name in DECLARED:
            params[p.name] = DECLARED[p.name]
        elif p.required:
            pytest.fail(f"Add a public value for the required parameter '{p.name}' of '{mechanism.id}' to DECLARED "
                        "so that this test covers it.")
    return params


@pytest.mark.parametrize("mechanism_id", mechanism_cases("incidence"))
def test_no_true_value_in_public_files(crafted, forbidden, mechanism_id, tmp_path, dpdesk_home):
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    out = tmp_path / "out"
    release_to_files(crafted, mechanism_id, 0.5, declared_params(mechanism), out, formats=("csv", "json", "parquet"),
                     reports=("html",), internal_report=True)
    values, fingerprint = forbidden, crafted.origin.fingerprint

    report = (out / "privacy-report.html").read_text(encoding="utf-8")
    assert "Privacy report" in report and "ε = 0.5" in report
    # the example row is the first published (noisy) value, which may equal a true count by chance
    assert leaks(without_example(report), values) == []

    metadata = json.loads((out / "release.json").read_text(encoding="utf-8"))
    assert len(metadata.pop("values")) == N_ITEMS  # the noisy counts may equal a true one by chance
    assert leaks(json.dumps(metadata, ensure_ascii=False), values) == []

    parquet_metadata = pq.read_schema(out / "release.parquet").metadata[b"dpdesk.release"].decode("utf-8")
    assert leaks(parquet_metadata, values) == []

    (entry,) = Ledger.open().entries(kinds=("release",))
    public = entry.public_dict()
    assert public["fingerprint"] == fingerprint  # the local ledger identifies the dataset ...
    public.pop("fingerprint")  # ... and nothing else in it comes from the data
    assert leaks(json.dumps(public, ensure_ascii=False), values) == []

    # the search finds true values where they belong: the internal report
    assert not (out / INTERNAL_REPORT_FILE).exists()  # never in the public folder
    internal = (dpdesk_home / "internal-reports" / f"entry-{entry.id}-{INTERNAL_REPORT_FILE}").read_text(encoding="utf-8")
    found = leaks(internal, values)
    assert any("104729" in f or "104,729" in f for f in found)
    assert any("summary rows" in f for f in found) and "the dataset fingerprint" in found


def test_no_true_value_in_the_pdf_text(crafted, forbidden, tmp_path, dpdesk_home):
    if shutil.which("pdftotext") is None:
        # CI installs poppler (scripts/system-deps.sh test): there a missing tool is a failure, not a skip
        if os.environ.get("CI"):
            pytest.fail("pdftotext is missing in CI: scripts/system-deps.sh test should have installed poppler-utils")
        pytest.skip("poppler-utils (pdftotext) is not installed; scripts/system-deps.sh test installs it")
    out = tmp_path / "out"
    release_to_files(crafted, "lpa", 1.0, {"bound": BOUND, "clamp": True}, out, reports=("pdf",), internal_report=True)
    text = subprocess.run(["pdftotext", "-layout", str(out / "privacy-report.pdf"), "-"], check=True,
                          capture_output=True, text=True).stdout
    assert "Privacy report" in text and "crafted" in text
    example = [line for line in text.splitlines() if "product-0000" in line]  # the first row, noisy
    assert len(example) == 1
    assert leaks(text.replace(example[0], ""), forbidden) == []
    # the same search finds the true values in the internal report's PDF, where they belong
    (internal_path,) = (dpdesk_home / "internal-reports").glob(f"entry-*-{INTERNAL_REPORT_FILES['pdf']}")
    internal = subprocess.run(["pdftotext", "-layout", str(internal_path), "-"], check=True,
                              capture_output=True, text=True).stdout
    assert any("104729" in f or "104,729" in f for f in leaks(internal, forbidden))


def test_the_leak_search_can_fail(crafted, forbidden):
    """A planted leak in each form the reports use is found."""
    values = forbidden
    assert leaks("<td>110,017</td>", values)
    assert leaks("there are 7919 buyers", values)
    assert leaks("max row count 1,237.", values) and leaks("removed 1225 items", values)
    mean = crafted.summary()["mean_row_count"]
    assert leaks(f"mean {mean:.4g} items", values)
    assert leaks(f"fingerprint {crafted.fingerprint[:12]}", values)
    # and does not cry wolf over hashes or longer numbers that merely contain the digits
    assert not leaks("sha256 a7919b104729c and 17919 and 7919.5", values)


def crafted_cells():
    counts = np.concatenate([[7919, 104_729], distinct_primes(10_007, 20_000, 98)])
    indices = np.arange(0, 100 * 37, 37)
    return dpdesk.from_cells(indices, counts, 10_000, name="crafted cells")  # m declared: cells 0..9999


@pytest.mark.parametrize("mechanism_id", mechanism_cases("cells"))
def test_no_true_value_in_public_files_cells(mechanism_id, tmp_path, dpdesk_home):
    data = crafted_cells()
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    out = tmp_path / "out"
    release_to_files(data, mechanism_id, 0.5, declared_params(mechanism, CELL_SETTINGS.get(mechanism_id)), out,
                     reports=("html",))
    # docs/ARCHITECTURE.md §3 lets Cormode's methods treat n and ‖M‖₁ as public facts when the report says
    # so; the cell counts themselves never are
    values = Forbidden({f"count {k}": number_forms(c) for k, c in enumerate(data.counts)}, data.fingerprint)
    report = (out / "privacy-report.html").read_text(encoding="utf-8")
    assert leaks(without_example(report), values) == []
    metadata = json.loads((out / "release.json").read_text(encoding="utf-8"))
    metadata.pop("values")
    assert leaks(json.dumps(metadata, ensure_ascii=False), values) == []
