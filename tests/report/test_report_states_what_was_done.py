"""The public report states what the release did, in words a reader can check (review of the public
reports, sections 4, 5, 8, 9, 11, 13 and 14): the (ε, δ) guarantee when a step spent δ; figures
computed from the data with a share of ε kept apart from the facts that spend no budget; the
parameters the mechanism takes, with the values it used; no internal identifiers, ``None`` or
``nan``; cell-table wording; and PDF pages that never end with a heading or a lead-in whose table
is on the next page."""

import re

import pytest

import dpdesk
from dpdesk.data.domain import parse_items_option
from dpdesk.mechanisms.publish import publish
from dpdesk.report.pdf import html_to_pdf
from dpdesk.report.public import absent_cell_notes, public_report_html
from dpdesk.workflow import NOT_COMPARED, release_to_files
from tests.conftest import DATA
from tests.privacy.test_ledger import small_data
from tests.report.test_no_leak import CELL_SETTINGS, crafted_cells, declared_params
from tests.report.test_public_report import text_of
from tests.report.test_report_reads_as_one import check_pages

HASHES = {"release.csv": "ab" * 32, "release.json": "cd" * 32}
ADULT_ATTRIBUTES = [1, 3, 5, 6, 7, 8, 9]  # as in the review: workclass, education, … sex (m = 907,200)
# an identifier joined by underscores (kept_coefficients, theta_over_epsilon_counts, …); "ε_g", "τ_s",
# "t_s" (paper notation of one letter) are not identifiers
IDENTIFIER = re.compile(r"(?<![\w])[A-Za-z][A-Za-z0-9]+(?:_[A-Za-z0-9]+)+(?![\w])")


@pytest.fixture(scope="module")
def adult():
    return dpdesk.load(DATA / "adult.data.gz", format="records", attributes=ADULT_ATTRIBUTES)


def as_released(release, entry: int = 20):
    """A seeded release (so its pages are the same on every run) published and given what the workflow
    adds (ledger entry, the dataset's budget, the choice), as if made with secure randomness."""
    release.exploration = False
    release.report["mode"] = "release"
    release = publish(release)
    release.report["ledger"] = {"entry": entry, "entry_hash": "ef" * 32, "ledger": "0f" * 16}
    release.report["dataset_budget"] = {"dataset": release.dataset_name, "epsilon_spent": 9.0, "delta_spent": 0.0,
                                        "releases": entry, "cap": 3.0}
    release.report["how_chosen"] = "chosen before looking at results"
    release.report["choice"] = {"stated": "chosen before looking at results", "observed": NOT_COMPARED}
    return release


def visible_text(report: str) -> str:
    """The report's text without the names shown as code (option names, column names, checksums)."""
    report = re.sub(r'<span class="hash">.*?</span>', " ", report, flags=re.S)
    return text_of(re.sub(r"<code>.*?</code>", " ", report, flags=re.S))


# -- section 13: PDF pages ---------------------------------------------------------------------------------
ADULT_SUMMARIES = {"threshold": {"target_size": 3000}, "priority": {"size": 2000},
                   "filter-threshold": {"threshold": 3, "tau": 20.0}, "filter-priority": {"threshold": 3, "size": 2000}}


@pytest.mark.parametrize("mechanism_id", list(ADULT_SUMMARIES))
def test_no_pdf_page_ends_with_a_heading_or_a_lead_in_for_the_adult_summaries(adult, mechanism_id, tmp_path):
    """The review's releases: "Privacy budget and its split" and its lead-in ended page 2, the budget
    table began page 3 (and "Further details" the same on page 4). With the heading kept only with
    its one-line lead-in, these reports fail this check."""
    release = as_released(dpdesk.release(adult, mechanism_id, epsilon=1.0, rng=4, **ADULT_SUMMARIES[mechanism_id]))
    report = public_report_html(release, HASHES)
    path = tmp_path / "report.pdf"
    path.write_bytes(html_to_pdf(report))
    check_pages(path, report)


def test_small_tables_are_not_split_and_lead_ins_stay_with_their_tables(tmp_path):
    """Filler pushes a heading, its lead-in ending in ':' and a table of 6 rows down the page, one line at
    a time: wherever the page ends, the three stay together and the table is whole."""
    from dpdesk.report.public import page, table

    rows = [(f"row {i}", f"value {i}") for i in range(1, 7)]
    for lines in range(28, 60, 2):
        filler = "".join(f"<p>filler line {i}</p>" for i in range(lines))
        report = page("t", filler + "<h2>Privacy budget and its split</h2><p>The release spends this in all:</p>"
                      + table(rows, ["Step", "Value"]) + "<p>After the table.</p>")
        path = tmp_path / f"small-{lines}.pdf"
        path.write_bytes(html_to_pdf(report))
        pages = check_pages(path, report)
        holding = [n for n, text in enumerate(pages) if "row 1" in text]
        assert len(holding) == 1 and all(f"row {i}" in pages[holding[0]] for i in range(1, 7)), lines
        assert "Privacy budget and its split" in pages[holding[0]] and "spends this in all:" in pages[holding[0]]


# -- section 4: (ε, δ) ------------------------------------------------------------------------------------
def test_a_release_with_private_discovery_states_epsilon_delta_everywhere(tmp_path, dpdesk_home):
    data = dpdesk.load(DATA / "groceries.csv.gz")
    out = tmp_path / "gs"
    written = release_to_files(data, "gs", 0.69, declared_params(dpdesk.mechanisms.get("gs"), {"bound": 8}), out,
                               items=parse_items_option("discover", delta=1e-6, bound=8), reports=("html",))
    report = written.release.report
    delta = sum(step.get("delta") or 0.0 for step in report["budget"])
    assert delta > 0
    text = text_of((out / "privacy-report.html").read_text(encoding="utf-8"))
    shown = f"{delta:.3g}"
    assert "(ε-differential privacy" not in text  # the pure-ε claim of the key facts
    assert f"(ε, δ)-differential privacy with δ = {shown}, one person added or removed" in text  # key facts
    assert f"The release is (ε, δ)-differentially private with ε = 0.69 and δ = {shown}" in text  # In short
    assert f"except with a probability of at most δ = {shown}" in text  # the plain-words section
    assert f"have spent ε = 0.69 and δ = {shown} in all" in text  # the ledger's total for the dataset
    assert f"the release as a whole is (ε, δ)-differentially private with δ = {shown}" in text  # after the notes
    # section 5: the discovered list and its size are not among the facts that spend no budget
    public, found = text.split("Treated as public", 1)[1].split("Found privately from the data", 1)
    assert "number of items (d)" not in public and "discovered privately" not in public
    assert "number of items (d)" in found and "discovered privately" in found
    assert "paid for: see the budget table" in found


def test_a_pure_release_still_says_pure_epsilon(tmp_path, dpdesk_home):
    data = small_data("clinic", seed=4, rows=60, items=12)
    out = tmp_path / "lpa"
    release_to_files(data, "lpa", 0.5, declared_params(dpdesk.mechanisms.get("lpa"), {"bound": 3}), out,
                     reports=("html",))
    text = text_of((out / "privacy-report.html").read_text(encoding="utf-8"))
    assert "(ε-differential privacy, one person added or removed)" in text
    assert "δ" not in text.split("Privacy budget and its split")[0]


def test_discovered_domains_of_a_cell_table_are_found_privately(tmp_path, dpdesk_home):
    data = dpdesk.load(DATA / "adult.data.gz", format="records", attributes=[1, 3, 5])
    out = tmp_path / "geometric"
    release_to_files(data, "geometric", 1.0, declared_params(dpdesk.mechanisms.get("geometric")), out,
                     items=parse_items_option("discover", delta=1e-6, cells=True), reports=("html",))
    text = text_of((out / "privacy-report.html").read_text(encoding="utf-8"))
    public, found = text.split("Treated as public", 1)[1].split("Found privately from the data", 1)
    assert "domain size m (cells)" not in public and "domain size m (cells)" in found
    assert "(ε, δ)-differential privacy with δ =" in text


# -- section 5: noisy estimates; section 8: parameters -------------------------------------------------------
def test_noisy_estimates_are_found_privately_and_derived_settings_are_shown_as_used(adult):
    release = as_released(dpdesk.release(adult, "threshold", epsilon=1.0, rng=4, target_size=3000))
    report = public_report_html(release, HASHES)
    text = visible_text(report)
    public, rest = text.split("Treated as public", 1)[1].split("Found privately from the data", 1)
    found, parameters = rest.split("Parameters", 1)
    estimates = release.report["estimates"]
    assert set(estimates) == {"non-empty cells n", "people ‖M‖₁"}
    assert "estimated" not in public and "noisy value" not in public
    for name, value in estimates.items():
        assert f"{name} {value:,} noisy estimate" in found
    parameters = parameters.split("How the mechanism was chosen")[0]
    tau = release.report["summary"]["sampling threshold τ"]
    assert "Sampling threshold τ not set; used: " in parameters and "(derived from the target size)" in parameters
    assert f"{tau:,.6g}" in parameters
    names = re.findall(r'<span class="hash">(.*?)</span>', report.split("<h2>Parameters</h2>", 1)[1].split("<h2>")[0])
    assert "tau" in names and "size" not in names and "threshold" not in names  # other summaries' options
    assert "Declared non-empty cells n not declared; estimated privately" in parameters


def test_parameters_show_only_the_schema_with_labels(tmp_path):
    data = small_data("clinic", seed=4, rows=60, items=12)
    release = as_released(dpdesk.release(data, "alpa", epsilon=0.5, rng=2))  # no declared Δ
    text = visible_text(public_report_html(release, HASHES))
    assert "Declared bound Δ not declared (a person may hold every item)" in text
    cells = as_released(dpdesk.release(crafted_cells(), "geometric", epsilon=0.5, rng=2))
    report = public_report_html(cells, HASHES)
    parameters = report.split("<h2>Parameters</h2>", 1)[1].split("<h2>", 1)[0]
    names = re.findall(r'<span class="hash">(.*?)</span>', parameters)
    assert sorted(names) == sorted(p.name for p in dpdesk.mechanisms.get("geometric").params)
    assert "—" not in parameters


# -- section 9: no internal names, None or nan, for any mechanism -------------------------------------------
def _every_report():
    incidence = small_data("clinic visits", seed=4, rows=80, items=25, prefix="ward-")
    for mechanism in dpdesk.mechanisms("incidence"):
        if mechanism.releasable:
            settings = {"rho": 4} if mechanism.id == "fpa" else None
            yield mechanism, incidence, declared_params(mechanism, settings)
    cells = crafted_cells()
    for mechanism in dpdesk.mechanisms("cells"):
        yield mechanism, cells, declared_params(mechanism, CELL_SETTINGS.get(mechanism.id))
    for method, settings in (("filter2", {"target_size": 60}), ("threshold", {"target_size": 60})):
        yield dpdesk.mechanisms.get(method), cells, {"target_size": settings["target_size"]}


@pytest.mark.parametrize("mechanism,data,params", [pytest.param(m, d, p, id=f"{m.id}-{'-'.join(p) or 'default'}")
                                                   for m, d, p in _every_report()])
def test_no_internal_identifier_none_or_nan_in_the_public_report(mechanism, data, params):
    release = as_released(dpdesk.release(data, mechanism.id, epsilon=0.8, rng=3, **params))
    text = visible_text(public_report_html(release, HASHES))
    allowed = {p.name for p in mechanism.params}  # an option's name, cited in a sentence
    found = {word for word in IDENTIFIER.findall(text) if word not in allowed}
    assert not found, found
    assert not re.search(r"\bNone\b|\bnan\b|\bNaN\b", text), re.findall(r".{40}\b(?:None|nan|NaN)\b.{20}", text)
    further = text.split("Further details", 1)[1] if "Further details" in text else ""
    assert "{" not in further and "': " not in further


def test_the_identifier_check_can_fail():
    assert IDENTIFIER.findall("noise kept_coefficients: 20; theta_over_epsilon_counts") == [
        "kept_coefficients", "theta_over_epsilon_counts"]
    assert not IDENTIFIER.findall("noisy sample t_s, scale Δ/(ε_g·w*), τ_s (the (s+1)-th priority)")


# -- sections 11 and 2/3: cell-table wording, absent cells, the form -------------------------------------------
def test_cell_tables_use_cell_wording_and_the_first_page_gives_every_absent_cell_note():
    release = as_released(dpdesk.release(crafted_cells(), "filter2", epsilon=0.5, rng=3, threshold=5))
    report = public_report_html(release, HASHES)
    text = text_of(report)
    lists = text.split("What the release lists", 1)[1].split("Treated as public", 1)[0]
    assert "Records with a value outside these domains were left out; a cell nobody is in has true count 0 and " \
           "gets noise like every other cell." in lists
    assert "items" not in lists and "counted as 0" not in lists
    first = text.split("How private is it?", 1)[0]
    notes = absent_cell_notes(release.report["publication"]["notes"])
    assert notes and "−θ or below" in notes[0]  # the note says both reasons a cell is absent (filter2's two sides)
    assert all(note in first for note in notes)


def test_absent_cell_notes_are_found_however_they_are_worded():
    notes = ["A cell that is not listed is published as 0: its noisy count was below θ.",
             "Listed cells whose noisy count is below 1 are left out (read as 0).",
             "Cells with a negative noisy count were left out of the published file.",
             "The weight column estimates each listed cell's count including what the sampling left out."]
    assert absent_cell_notes(notes) == notes[:3]


def test_the_first_page_uses_the_releases_own_form_text():
    release = as_released(dpdesk.release(crafted_cells(), "sketch", epsilon=0.5, rng=3))
    release.report["publication"]["form"] = "whole numbers (may be below 0)"
    text = text_of(public_report_html(release, HASHES))
    first = text.split("How private is it?", 1)[0]
    assert "as whole numbers (may be below 0)," in first and "at least 0" not in first
    assert "Published values whole numbers (may be below 0)" in text


def test_one_item_is_not_plural(tmp_path):
    data = small_data("clinic", seed=4, rows=60, items=12)
    release = as_released(dpdesk.release(data, "lpa", epsilon=0.5, rng=2, bound=3, bound_holds=True))
    release.report["public_facts"]["number of items (d)"] = 1
    release.values, release.labels, release.margin95 = release.values[:1], release.labels[:1], release.margin95[:1]
    text = text_of(public_report_html(release, HASHES))
    assert "The noisy counts of 1 item as" in text and "1 items" not in text


def test_the_first_pages_margin_promise_is_the_one_that_holds():
    """A summary lists cells chosen by their noisy values, which no margin covers: it publishes none and the
    first page says why; a table with noise on every cell promises the margin of the true count, and says
    what it covers."""
    def first_page(mechanism, **params):
        release = as_released(dpdesk.release(crafted_cells(), mechanism, epsilon=0.5, rng=3, **params))
        return text_of(public_report_html(release, HASHES)).split("The release at a glance", 1)[0]

    selected = first_page("filter2", threshold=5)
    assert "No margin of error is published: the listed cells were chosen because their noisy counts" in selected
    assert "none published" in selected and "95 times in 100" not in selected
    every = first_page("geometric")
    assert ("The true count of each cell lies within ±margin95 (the last column) of its published value 95 times "
            "in 100: the margin covers the noise, which is the whole error") in every
