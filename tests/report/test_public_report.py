"""The public privacy report: every item the issue lists, self-contained, escaped."""

import html
import math
import re

import numpy as np
import pytest

import dpdesk
from dpdesk.privacy.planner import odds_after
from dpdesk.mechanisms.counts import LPA
from dpdesk.privacy.budget import BudgetSplit
from dpdesk.privacy.randomness import SecureRandom
from dpdesk.report.public import fmt, public_report_html
from dpdesk.workflow import DEFAULT_CHOSEN, release_to_files
from tests.privacy.test_ledger import small_data

from tests.secure_run import secure_run

HASHES = {"release.csv": "0123456789abcdef" * 4, "release.json": "fedcba9876543210" * 4}


@pytest.fixture
def data():
    return small_data("survey <2024>", seed=11, rows=50, items=9, prefix="c")


def text_of(report: str) -> str:
    """The report's visible text, with tags removed and entities decoded."""
    body = report.split("<body", 1)[1]
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def test_released_through_the_workflow_the_report_has_every_part(dpdesk_home, data, tmp_path):
    out = tmp_path / "out"
    release_to_files(data, "lpa", 0.7, {"bound": 3, "clamp": True}, out, reports=("html",))
    report = (out / "privacy-report.html").read_text(encoding="utf-8")
    text = text_of(report)
    mechanism = dpdesk.mechanisms.get("lpa")
    # mechanism and its paper
    assert mechanism.name in text and mechanism.paper in text and mechanism.reference in text
    # ε and the split
    assert "ε = 0.7" in text and "noisy counts" in text and "100%" in text
    # what was treated as public: declared Δ and d
    assert "declared bound Δ (items per person) 3" in text and "number of items (d) 9" in text
    # parameters, with their labels
    assert "Declared bound Δ" in text and "Set negative counts to 0" in text and "geometric" in text
    # how it was chosen: the default statement
    assert DEFAULT_CHOSEN in text
    # randomness, version, date, ledger entry, file hashes
    assert "operating system CSPRNG" in text and f"dpdesk {dpdesk.__version__}" in text
    from dpdesk.privacy.ledger import Ledger

    entry = Ledger.open().entries()[-1]
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", text) and f"#{entry.id}" in text and entry.hash in text
    for name, digest in entry.files.items():
        if not name.startswith("raw/"):  # the raw form's files (for `export --raw`) are not published here
            assert name in text and digest in text
    # plain-language guarantee: odds before and after
    assert f"{math.exp(0.7):.4g}" in text
    posterior, odds = odds_after(0.7, 0.5)
    assert f"at most {100 * posterior:.3g}%" in text and f"at most {odds:.3g} : 1" in text
    # expected error from public parameters, with the clamping note (the counts' ε: 5% estimated what Δ cut off)
    scale = 3 / (0.7 * 0.95)
    assert "95% of counts lie within ±" in text and "of the count without noise" in text and f"{scale:,.3g}" in text
    assert "Negative noisy counts are set to 0" in text
    # the dataset name, escaped
    assert "survey <2024>" in text and "survey &lt;2024&gt;" in report


def test_every_sub_step_and_its_share_is_listed(data):
    split = BudgetSplit(1.0).add("choose θ", 0.1, "exponential mechanism over θ").add("noisy counts", 0.9, "Lap(θ/ε)")
    release = LPA().new_release(data, 1.0, {"bound": 3, "noise": "geometric", "clamp": False}, split,
                                SecureRandom(), values=np.zeros(9))
    text = text_of(public_report_html(release, HASHES))
    assert "choose θ 0.1 10% exponential mechanism over θ" in text
    assert "noisy counts 0.9 90% Lap(θ/ε)" in text
    assert "total 1 100%" in text


def test_the_stewards_statement_is_shown_escaped(data):
    release = secure_run(data, "lpa", epsilon=1.0, bound=3)
    release.report["how_chosen"] = 'compared on a public stand-in; <script>alert("x")</script>'
    report = public_report_html(release, HASHES)
    assert "<script>" not in report
    assert 'compared on a public stand-in; &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;' in report
    assert "smallest error on the true data" in text_of(report)  # the warning next to it


def test_mechanisms_without_a_public_error_figure_say_so(data):
    release = secure_run(data, "lpa", epsilon=1.0, bound=3)
    release.report["expected_error"] = None
    text = text_of(public_report_html(release, HASHES))
    assert "depends on the data itself" in text


def test_extra_public_details_of_a_mechanism_are_shown(data, tmp_path):
    release = secure_run(data, "diff", epsilon=1.0, index="uniform")
    text = text_of(public_report_html(release, HASHES))
    assert "Further details" in text and "noise scales" in text
    # a nested detail as a labelled sub-row, not as a Python dictionary with internal keys
    assert f"– factor α (item i's noise scale is α·γ_i) {fmt(release.report['noise_scales']['alpha'])}" in text
    assert "alpha:" not in text and "noise_scales" not in text


def test_the_report_is_self_contained(data):
    release = secure_run(data, "lpa", epsilon=1.0, bound=3)
    report = public_report_html(release, HASHES)
    assert report.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in report
    for outside in ("http://", "https://", "<link", "@import", "url(", "<script", "<img"):
        assert outside not in report
    assert "DejaVu Sans" in report  # system fonts only


def without_example(report: str) -> str:
    """The report without its example row (the first published value: noisy, public like the files)."""
    return re.sub(r'<table class="example".*?</table>', "", report, flags=re.S)


def test_no_true_data_or_internal_facts_are_read(data, monkeypatch):
    """The report is built from the public report dict (and, as an example, the first published value)
    only: poisoning every true-data field of the release changes nothing; changing the published values
    changes only the example row."""
    release = secure_run(data, "lpa", epsilon=1.0, bound=3)
    before = public_report_html(release, HASHES)
    release.internal = {"rows_truncated": 987654321}
    release.diagnostics = {"x": "987654321"}
    release.dataset_fingerprint = "987654321" * 7
    assert public_report_html(release, HASHES) == before
    release.values = np.full(9, 987654321.0)
    after = public_report_html(release, HASHES)
    assert "987,654,321" in after and without_example(after) == without_example(before)
