"""The Configure page for a steward who has never read the papers (issue 19): mechanisms grouped
by what they do, full names, the paper one click away; the recommendation from declared facts
only, following them and used with one button; ε as named levels with odds, labelled slider
ends and an accuracy target; the ledger total said as odds."""

import math

import pytest
from PySide6.QtCore import Qt

import dpdesk
from dpdesk import mechanisms as registry
from dpdesk.data.dataset import Dataset, from_cells
from dpdesk.data.domain import DomainDeclaration
from dpdesk.privacy import planner
from dpdesk.evaluation.recommend import recommend
from dpdesk.gui import configure_page
from dpdesk.gui.configure_page import PRESETS, ConfigurePage, odds_pair
from dpdesk.gui.main_window import MainWindow
from dpdesk.gui.state import AppState
from dpdesk.paths import sample_path

SAMPLE_ITEMS = 169  # the Groceries sample's product list, stated public below


@pytest.fixture
def sample():
    return dpdesk.load(sample_path())


@pytest.fixture
def window(qtbot, dpdesk_home, sample):
    from dpdesk.gui.app import make_app

    make_app()
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    w.state.set_dataset(sample, {"path": str(sample_path())}, "groceries", DomainDeclaration("public-data"))
    w.steps.setCurrentRow(1)
    yield w
    w.state.dirty = False


def title(page) -> str:
    return page.recommendation.title.text()


# --- the list ------------------------------------------------------------------------------------

def test_mechanisms_are_grouped_by_what_they_do(window):
    groups = window.configure_page.group_titles
    assert groups["lpa"] == groups["diff"] == "Noise on every count"
    assert {groups[m] for m in ("gs-r", "gs-s-row", "gs-s-col", "gs")} == {"Share noise across similar counts"}
    assert {groups[m] for m in ("dpsense", "dpsense-s", "alpa")} == {"No bound needed"}
    assert "fpa-oracle" not in groups  # not private: never offered


def test_large_tables_list_the_summaries_that_publish_only_big_counts(qtbot):
    state = AppState()
    page = ConfigurePage(state)
    qtbot.addWidget(page)
    cells = from_cells([0, 7, 42], [5, 1, 9], 1000)
    state.set_dataset(cells, {}, "table", DomainDeclaration("public-data", cells=True))
    groups = page.group_titles
    assert groups["geometric"] == "Noise on every count"
    assert {groups[m] for m in ("filter", "filter2", "threshold", "priority", "filter-threshold",
                                "filter-priority")} == {"Large sparse tables: publish only the big counts"}
    assert not page.bound_box.isVisibleTo(page)  # no Δ, no typical row length for a table of cells
    assert "1,000 cells" in page.recommendation.reasons.text()  # the declared table's size


def test_full_names_wrap_and_the_paper_is_one_click_away(window, qtbot):
    page = window.configure_page
    window.resize(900, 700)  # a narrow window: names must wrap, not be cut
    qtbot.wait(50)
    for mechanism_id, row in page.rows.items():
        mechanism = registry.get(mechanism_id)
        assert mechanism.name in row.name.text() and row.name.wordWrap()
        assert row.name.height() >= row.name.heightForWidth(row.name.width())  # every line shown
    row = page.rows["gs"]
    assert not row.reference.isVisible()
    qtbot.mouseClick(row.paper_button, Qt.LeftButton)
    assert row.reference.isVisible()
    assert "Kellaris & Papadopoulos" in row.reference.text() and "§3.3" in row.reference.text()


def test_clicking_a_row_shows_its_settings(window, qtbot):
    page = window.configure_page
    qtbot.mouseClick(page.rows["dpsense"].summary, Qt.LeftButton)
    assert page.current == "dpsense" and "DPSense" in page.details.title()


# --- the recommendation --------------------------------------------------------------------------

def test_the_recommendation_follows_epsilon_delta_and_the_typical_row(window, qtbot):
    page, state = window.configure_page, window.state
    page.epsilon.spin.setValue(0.1)
    # nothing declared yet: no advice (it could only be one noisy average for every item), a question
    assert page.advice is None and not page.recommendation.use_button.isEnabled()
    assert "Declare what you know" in page.recommendation.reasons.text()
    assert not any(row.badge.isVisible() for row in page.rows.values())
    page.bound.setValue(20)  # margins asked (issue 28): only mechanisms that publish them
    assert page.advice.mechanism == "lpa" and "LPA" in title(page) and "Δ = 20" in title(page)
    page.bound.setValue(50)  # a generous bound for 169 items: grouping shares the noise
    assert page.advice.mechanism == "gs" and "GS — grouping" in title(page) and "Δ = 50" in title(page)
    qtbot.mouseClick(page.epsilon.preset_buttons["Balanced"], Qt.LeftButton)
    # a larger ε on a short list: noise on every count wins again (the rule relearnt in issue 29)
    assert page.advice.mechanism == "lpa" and page.advice.declared["epsilon"] == pytest.approx(math.log(2), abs=1e-4)
    assert "LPA" in title(page) and "Δ = 50" in title(page)
    page.bound.setValue(0)
    page.typical.setValue(4)
    assert page.advice.mechanism == "lpa" and "about 4 items per typical person" in page.recommendation.reasons.text()
    # exactly the rule's advice for the declared facts
    assert page.advice.to_json() == recommend("incidence", SAMPLE_ITEMS, state.epsilon, None, 4).to_json()
    assert page.rows["lpa"].badge.isVisible() and not page.rows["dpsense-s"].badge.isVisible()


def test_the_recommendation_never_reads_the_data(window, monkeypatch, sample):
    page = window.configure_page
    seen = []
    real = configure_page.recommend

    def spy(kind, domain_size, epsilon, bound=None, typical_row_length=None, **asked):
        seen.append((kind, domain_size, round(epsilon, 4), bound, typical_row_length))
        return real(kind, domain_size, epsilon, bound, typical_row_length, **asked)

    monkeypatch.setattr(configure_page, "recommend", spy)

    def peeked(*_args, **_kwargs):
        raise AssertionError("a statistic of the true data was read")

    for name in ("row_counts", "column_counts", "column_sums", "nnz", "n_rows", "binary", "fingerprint"):
        monkeypatch.setattr(Dataset, name, property(peeked))
    for name in ("summary", "row_length_histogram"):
        monkeypatch.setattr(Dataset, name, peeked)

    class ShapeOnly:  # the matrix, with nothing but its shape (the number of items is declared anyway)
        def __init__(self, shape):
            self.shape = shape

        def __getattr__(self, name):
            peeked()

    monkeypatch.setattr(sample, "matrix", ShapeOnly(sample.matrix.shape))
    page.epsilon.spin.setValue(0.1)
    first = title(page)
    page.typical.setValue(3)
    assert title(page) != first
    page.bound.setValue(20)
    page.epsilon.spin.setValue(2.5)
    assert seen[-1] == ("incidence", SAMPLE_ITEMS, 2.5, 20, 3.0)
    assert {s[1] for s in seen} == {SAMPLE_ITEMS}  # the size of the declared list, nothing observed


def test_the_number_of_items_comes_from_the_declaration(window):
    page, state = window.configure_page, window.state
    page.bound.setValue(20)  # with margins asked, a bound (or a typical row) is needed for advice
    state.set_publication("groceries", DomainDeclaration("range", size=500))
    assert "500 items" in page.recommendation.reasons.text()
    state.set_publication("groceries", DomainDeclaration("discovered", delta=1e-6, share=0.1))
    assert page.advice is None and not page.recommendation.use_button.isEnabled()
    assert "not known beforehand" in page.recommendation.reasons.text()


def test_use_the_recommendation_ticks_it_and_sets_its_settings(window, qtbot):
    page, state = window.configure_page, window.state
    qtbot.mouseClick(page.epsilon.preset_buttons["Balanced"], Qt.LeftButton)
    page.typical.setValue(4)  # no Δ declared: the rule proposes one from the typical row
    advice = page.advice
    assert advice.mechanism == "lpa" and advice.params == {"bound": 8}  # Δ = 2 × the typical row
    page.tick(set())  # nothing ticked yet: the button does it
    assert not state.configurations["lpa"].enabled
    qtbot.mouseClick(page.recommendation.use_button, Qt.LeftButton)
    assert state.configurations["lpa"].enabled and page.rows["lpa"].check.isChecked()
    assert state.bound == 8 and state.bound_proposed and page.bound.value() == 8
    assert page.bound_note.isVisibleTo(page) and "proposed by the recommendation" in page.bound_note.text()
    assert state.params_for("lpa") == {"bound": 8}
    assert page.current == "lpa"
    # the proposal is the rule's output, not a declaration: the advice stays what was used
    assert page.advice.mechanism == "lpa" and "in use" in title(page)
    assert not page.recommendation.use_button.isEnabled()
    # the Release page offers it, and proposes to say how it was chosen
    release = window.release_page
    assert release.mechanism.currentData() == "lpa"
    assert release.chosen.currentText() == advice.chosen_how
    assert "declared facts only" in advice.chosen_how and "about 4 items per typical person" in advice.chosen_how
    assert "kind" not in advice.chosen_how and "typical_row_length" not in advice.chosen_how
    # the steward's own Δ is a declaration again
    page.bound.setValue(6)
    assert not state.bound_proposed and not page.bound_note.isVisibleTo(page)
    assert page.advice.to_json() == recommend("incidence", SAMPLE_ITEMS, state.epsilon, 6, 4).to_json()


def test_a_declared_bound_stays_declared_when_the_recommendation_is_used(window, qtbot):
    page, state = window.configure_page, window.state
    state.set_publication("groceries", DomainDeclaration("range", size=5000))  # many items: a pick that takes Δ
    page.epsilon.spin.setValue(0.1)
    page.bound.setValue(50)
    assert page.advice.mechanism == "gs"
    qtbot.mouseClick(page.recommendation.use_button, Qt.LeftButton)
    assert state.bound == 50 and not state.bound_proposed and state.configurations["gs"].enabled


# --- ε in words ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, value, odds", [("Strong protection", math.log(1.5), "60/40"),
                                                ("Balanced", math.log(2), "67/33"),
                                                ("Accuracy first", math.log(3), "75/25")])
def test_presets_set_epsilon_and_say_the_odds(window, qtbot, name, value, odds):
    control = window.configure_page.epsilon
    control.spin.setValue(0.05)
    assert not any(b.isChecked() for b in control.preset_buttons.values())
    qtbot.mouseClick(control.preset_buttons[name], Qt.LeftButton)
    assert window.state.epsilon == pytest.approx(value, abs=1e-4)
    assert control.preset_buttons[name].isChecked() and control.preset() == name
    assert odds_pair(value) == odds and odds in control.preset_odds[name].text()
    assert odds in control.odds.text() and name in control.odds.text()
    assert [n for n, _ in PRESETS] == ["Strong protection", "Balanced", "Accuracy first"]


def test_the_slider_ends_say_what_they_mean(window):
    control = window.configure_page.epsilon
    assert "more private" in control.more_private.text() and "0.01" in control.more_private.text()
    assert "more accurate" in control.more_accurate.text() and "10" in control.more_accurate.text()
    control.slider.setValue(control.slider.minimum())
    assert window.state.epsilon == pytest.approx(0.01)
    control.slider.setValue(control.slider.maximum())
    assert window.state.epsilon == pytest.approx(10)


def test_accuracy_first_sets_the_planners_epsilon(window, qtbot):
    page, state = window.configure_page, window.state
    page.bound.setValue(20)
    target = page.epsilon.accuracy
    target.answer.setValue(5000)
    target.within.setValue(10)
    target.confidence.setValue(95)
    expected = planner.epsilon_needed(5000, 0.05, 0.10, 20)
    assert f"{expected:.4g}" in target.result.text() and "Δ = 20" in target.result.text()
    qtbot.mouseClick(target.use, Qt.LeftButton)
    assert state.epsilon == pytest.approx(expected, abs=1e-4)
    # without a declared Δ: one item per person, said so
    page.bound.setValue(0)
    target.answer.setValue(500)
    assert f"{planner.epsilon_needed(500, 0.05, 0.10, 1):.4g}" in target.result.text()
    assert "no bound is set" in target.result.text()
    # a target no ε up to 10 meets cannot be used
    target.answer.setValue(1)
    target.within.setValue(0.1)
    assert not target.use.isEnabled() and "more than dpdesk allows" in target.result.text()


def test_the_ledger_total_is_said_as_odds(window, data_dir):
    assert "stays 50/50" in window.ledger_label.text()
    from dpdesk.workflow import secure_release

    secure_release(window.state.dataset, "lpa", math.log(3), {"bound": 30}, dataset="groceries",
                   items=DomainDeclaration("public-data"))
    window.state.ledger_changed.emit()
    text = window.ledger_label.text()
    assert "ε used 1.1" in text and "at most 75/25" in text


def test_the_typical_row_length_is_saved_with_the_project(window, tmp_path):
    from dpdesk.project import Project

    window.configure_page.typical.setValue(4.5)
    path = window.state.to_project().save(tmp_path / "groceries.dpdesk")
    other = AppState()
    other.apply_project(Project.load(path))
    assert other.typical_row_length == 4.5
