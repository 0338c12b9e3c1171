"""The public report reads as one (issue #16): a first page that answers what was published, how
private and how accurate it is; headings that stay with their content across PDF pages; accessible
HTML; only the options that change what is published; what the steward stated about the choice of
mechanism next to what dpdesk observed."""

import html
import re

import pytest

import dpdesk
from dpdesk.mechanisms.publish import publish
from dpdesk.report.internal import internal_report_html
from dpdesk.report.pdf import html_to_pdf
from dpdesk.report.public import NOT_OBSERVED, public_report_html
from dpdesk.workflow import CHOSEN_ON_TRUE_DATA, NOT_COMPARED, comparison_run, observed_choice, release_to_files
from tests.privacy.test_ledger import small_data
from tests.report.test_no_leak import CELL_SETTINGS, crafted_cells, declared_params
from tests.report.test_pdf import pdf_pages_text
from tests.report.test_public_report import text_of

from tests.secure_run import secure_run

QUESTIONS = ("What was published?", "How private is it?", "How accurate is it?")
HASHES = {"release.csv": "ab" * 32, "release.json": "cd" * 32}


def headings(report: str) -> list[tuple[int, str]]:
    return [(int(level), html.unescape(re.sub(r"<[^>]+>", "", text)).strip())
            for level, text in re.findall(r"<h([1-6])[^>]*>(.*?)</h\1>", report, re.S)]


def body_lines(page_text: str) -> list[str]:
    """A PDF page's text lines without the page-number footer."""
    return [line.strip() for line in page_text.splitlines() if line.strip() and " · page " not in line]


def check_pages(path, report: str) -> list[str]:
    """Every page of the PDF: no page ends with a heading, nor with a lead-in ending in ':' whose
    table is on the next page; returns the pages' text."""
    pages = pdf_pages_text(path)
    titles = {text for _, text in headings(report)}
    for number, text in enumerate(pages, start=1):
        lines = body_lines(text)
        assert lines, f"page {number} is empty"
        assert lines[-1] not in titles, f"page {number} ends with the heading '{lines[-1]}'"
        if number < len(pages):
            assert not lines[-1].endswith(":"), f"page {number} ends with the lead-in '{lines[-1]}'"
    return pages


def incidence_release(tmp_path, mechanism_id, chosen_how=None, **options):
    data = small_data("clinic visits", seed=4, rows=80, items=25, prefix="ward-")
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    params = declared_params(mechanism, {"rho": 4} if mechanism_id == "fpa" else None)
    out = tmp_path / mechanism_id
    written = release_to_files(data, mechanism_id, 0.8, params, out, reports=("html", "pdf"), chosen_how=chosen_how,
                               **options)
    return out, written.release


def first_page_answers(first: str, release) -> None:
    flat = " ".join(first.split())
    for question in QUESTIONS:
        assert question in flat, question
    published, private, accurate = (flat.split(q, 1)[1] for q in QUESTIONS)
    assert re.search(r"noisy counts of|published values of", published.split("How private")[0])
    assert f"ε = {release.epsilon:g}" in private.split("How accurate")[0] and "50/50" in private
    assert "have spent ε =" in private  # the dataset's total in the ledger, as of this entry
    assert "margin95" in accurate and "first row of the release" in accurate
    first_label = release.labels[0] if release.values is not None else None
    if first_label is not None:
        assert str(first_label) in accurate


@pytest.mark.parametrize("mechanism_id", [pytest.param(m.id, id=m.id) for m in dpdesk.mechanisms("incidence")
                                          if m.releasable])
def test_the_first_page_answers_three_questions_and_no_page_ends_with_a_heading(mechanism_id, tmp_path,
                                                                                 dpdesk_home):
    out, release = incidence_release(tmp_path, mechanism_id)
    report = (out / "privacy-report.html").read_text(encoding="utf-8")
    pages = check_pages(out / "privacy-report.pdf", report)
    first_page_answers(pages[0], release)


@pytest.mark.parametrize("mechanism_id", [pytest.param(m.id, id=m.id) for m in dpdesk.mechanisms("cells")])
def test_cell_summaries_too(mechanism_id, tmp_path, dpdesk_home):
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    out = tmp_path / "out"
    written = release_to_files(crafted_cells(), mechanism_id, 0.5,
                               declared_params(mechanism, CELL_SETTINGS.get(mechanism_id)), out, reports=("html", "pdf"))
    report = (out / "privacy-report.html").read_text(encoding="utf-8")
    pages = check_pages(out / "privacy-report.pdf", report)
    flat = " ".join(pages[0].split())
    assert all(q in flat for q in QUESTIONS) and "margin95" in flat
    assert "table of 10,000 cells" in flat
    publication = written.release.report["publication"]
    if mechanism_id != "sketch":  # what a cell that is not listed means, on the first page
        assert "not listed" in flat and "not listed" in " ".join(publication["notes"])


def test_long_reports_keep_headings_with_their_content(tmp_path, dpdesk_home):
    """Statements of growing length push every later section down the pages: wherever a page break
    falls, no heading is left at the foot of a page (a planted removal of the keep-with-next rule
    leaves one there in this sweep)."""
    data = small_data("clinic visits", seed=4, rows=80, items=25, prefix="ward-")
    release = publish(secure_run(data, "gs", epsilon=0.8, bound=3))
    for words in range(0, 320, 20):
        release.report["choice"] = {"stated": "we chose it carefully " * words, "observed": NOT_COMPARED}
        report = public_report_html(release, HASHES)
        path = tmp_path / f"report-{words}.pdf"
        path.write_bytes(html_to_pdf(report))
        check_pages(path, report)


def test_headings_are_in_order_tables_have_scoped_headers_and_charts_have_text(tmp_path, dpdesk_home):
    out, release = incidence_release(tmp_path, "gs", internal_report=True, internal_dir=tmp_path / "internal")
    public = (out / "privacy-report.html").read_text(encoding="utf-8")
    (internal_path,) = (tmp_path / "internal").glob("*.html")
    for report in (public, internal_path.read_text(encoding="utf-8")):
        levels = [level for level, _ in headings(report)]
        assert levels[0] == 1 and levels.count(1) == 1 and max(levels) <= 3
        assert all(b - a <= 1 for a, b in zip(levels, levels[1:])), levels  # no level skipped
        cells = re.findall(r"<th\b[^>]*>", report)
        assert cells and all('scope="col"' in c or 'scope="row"' in c for c in cells)
        for svg in re.findall(r"<svg\b.*?</svg>", report, re.S):
            assert 'role="img"' in svg and "aria-label=" in svg and "<title>" in svg
    assert "<svg" in internal_path.read_text(encoding="utf-8")  # the charts checked above exist
    assert [text for level, text in headings(public) if level == 3] == list(QUESTIONS)


def test_options_that_only_change_the_plots_are_not_in_the_public_report(tmp_path, dpdesk_home):
    out, release = incidence_release(tmp_path, "gs")
    assert "diagnostics" in release.params  # still recorded with the release …
    text = text_of((out / "privacy-report.html").read_text(encoding="utf-8"))
    assert "Compute plot data" not in text and "diagnostics" not in text  # … but not shown as a setting
    assert "Simulated releases per group size" in text  # an advanced option that does change the release


def test_the_footer_is_true_of_a_mechanism_that_chooses_privately(tmp_path, dpdesk_home):
    out, release = incidence_release(tmp_path, "gs")
    text = text_of((out / "privacy-report.html").read_text(encoding="utf-8"))
    assert release.report["chosen_group_size"] >= 1
    assert "No number in it was computed from the people's records" not in text
    assert "anything the mechanism chose privately (a group size" in text
    assert "Published as whole numbers of at least 0" in text and "costs no privacy" in text


def test_the_stewards_words_and_what_dpdesk_observed(tmp_path, dpdesk_home):
    runs = [comparison_run(["lpa", "gs"], [0.5, 1.0], on_true_data=True)]
    observed = observed_choice(runs)
    assert observed.startswith("before this release, dpdesk compared mechanisms on the true data: gs, lpa")
    out, release = incidence_release(tmp_path, "lpa", chosen_how="set by our publication policy", observed=observed)
    text = text_of((out / "privacy-report.html").read_text(encoding="utf-8"))
    assert "set by our publication policy" in text and observed in text
    assert release.report["choice"] == {"stated": "set by our publication policy", "observed": observed}
    assert release.report["how_chosen"] == "set by our publication policy"  # what earlier versions read
    # a file written by an earlier dpdesk has the statement only
    old = dict(release.report)
    old.pop("choice")
    old["how_chosen"] = CHOSEN_ON_TRUE_DATA
    release.report = old
    text = text_of(public_report_html(release, HASHES))
    assert CHOSEN_ON_TRUE_DATA in text and NOT_OBSERVED in text


def test_without_a_project_the_cli_observes_no_comparison(tmp_path, dpdesk_home):
    out, _ = incidence_release(tmp_path, "lpa")
    text = text_of((out / "privacy-report.html").read_text(encoding="utf-8"))
    assert f"What dpdesk observed: {NOT_COMPARED}." in text
