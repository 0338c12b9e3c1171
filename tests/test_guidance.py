"""The help's content and the next-step sentences (dpdesk.guidance, no Qt): every mechanism the
registry knows has an entry and a picture, searching filters, links lead somewhere, the committed
pictures are what scripts/help_pictures.py draws, and the next step depends on page and progress."""

import importlib.util
import re
from pathlib import Path

import pytest

from dpdesk import guidance
from dpdesk import mechanisms as registry
from dpdesk.guidance import Progress, next_step

ROOT = Path(__file__).resolve().parent.parent


def load_picture_script():
    spec = importlib.util.spec_from_file_location("help_pictures", ROOT / "scripts" / "help_pictures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_registered_mechanism_has_an_entry_with_a_picture():
    entries = {e.id: e for e in guidance.help_entries()}
    for mechanism in registry.all_mechanisms():
        entry = entries.get(mechanism.id)
        assert entry is not None, f"no help entry for the mechanism {mechanism.id} (resources/help/mechanisms/)"
        assert entry.kind == "mechanism"
        assert entry.title == mechanism.name  # the registry's name, never written twice
        assert mechanism.paper in entry.source and mechanism.reference in entry.source
        assert entry.picture is not None and entry.picture.is_file(), f"no picture for {mechanism.id}"
        assert entry.picture.read_text(encoding="utf-8").lstrip().startswith("<svg")


def test_mechanism_entries_are_two_or_three_plain_sentences():
    for entry in guidance.help_entries():
        if entry.kind != "mechanism":
            continue
        sentences = re.findall(r"[.!?](?:\*\*)?(?=\s|$)", entry.body)
        assert 2 <= len(sentences) <= 3, f"{entry.id}: {len(sentences)} sentences"
        assert "\n\n" not in entry.body, f"{entry.id}: one short paragraph"


def test_no_entry_for_a_mechanism_that_does_not_exist():
    known = {m.id for m in registry.all_mechanisms()}
    files = {p.stem for p in (guidance.help_dir() / "mechanisms").glob("*.md")}
    assert files <= known, f"help for unknown mechanisms: {sorted(files - known)}"


def test_the_glossary_has_the_words_a_steward_meets():
    ids = {e.id for e in guidance.help_entries() if e.kind == "term"}
    assert {"epsilon", "delta", "truncation", "sensitivity", "margin-of-error", "ledger", "stand-in"} <= ids
    pages = [e.id for e in guidance.help_entries() if e.kind == "page"]
    assert pages == [guidance.page_entry_id(p) for p in guidance.PAGES]


def test_search_keeps_the_entries_that_hold_every_word():
    everything = guidance.search("")
    assert len(everything) == len(guidance.help_entries())
    truncation = {e.id for e in guidance.search("truncation")}
    assert {"truncation", "delta", "lpa"} <= truncation
    assert "sketch" not in truncation and "page-plan" not in truncation
    both = {e.id for e in guidance.search("truncation noise")}
    assert both and both <= truncation  # more words, fewer entries
    assert [e.id for e in guidance.search("xyzzy")] == []


def test_search_ignores_case_and_accents_and_finds_ids():
    assert "epsilon" in {e.id for e in guidance.search("EPSILON")}
    assert {e.id for e in guidance.search("Théta")} == {e.id for e in guidance.search("theta")}
    assert "dpsense-s" in {e.id for e in guidance.search("dpsense-s")}
    assert "gs-r" in {e.id for e in guidance.search("GS-R random")}


def test_every_link_and_see_also_leads_to_an_entry():
    ids = {e.id for e in guidance.help_entries()}
    for entry in guidance.help_entries():
        for target in re.findall(r"\(help:([\w-]+)\)", entry.body):
            assert target in ids, f"{entry.id} links to the unknown entry {target}"
        for target in entry.see:
            assert target in ids, f"{entry.id} lists the unknown entry {target} under see"


def test_entry_markdown_has_title_picture_source_and_links():
    entry = guidance.help_entry("gs")
    text = guidance.entry_markdown(entry, "picture:gs.svg")
    assert text.startswith(f"# {registry.get('gs').name}")
    assert "![" in text and "(picture:gs.svg)" in text
    assert "Source: " in text and "(help:delta)" in text


def test_committed_pictures_are_what_the_script_draws():
    drawn = load_picture_script().pictures()
    folder = guidance.help_dir() / "pictures"
    committed = {p.stem: p.read_text(encoding="utf-8") for p in folder.glob("*.svg")}
    assert set(drawn) == set(committed), "run: python scripts/help_pictures.py"
    stale = [name for name in drawn if drawn[name] != committed[name]]
    assert not stale, f"pictures out of date (run python scripts/help_pictures.py): {stale}"


def test_pictures_use_only_the_colours_the_gui_can_swap():
    allowed = {c.lower() for c in (guidance.PICTURE_INK, guidance.PICTURE_MUTED, guidance.PICTURE_FAINT,
                                   guidance.PICTURE_PAPER, *guidance.PICTURE_ACCENTS)}
    for path in (guidance.help_dir() / "pictures").glob("*.svg"):
        used = {c.lower() for c in re.findall(r"#[0-9a-fA-F]{6}\b", path.read_text(encoding="utf-8"))}
        assert used <= allowed, f"{path.name} uses {sorted(used - allowed)}"
    used_pictures = {e.picture.name for e in guidance.help_entries() if e.picture}
    on_disk = {p.name for p in (guidance.help_dir() / "pictures").glob("*.svg")}
    assert on_disk == used_pictures, "a picture no entry shows"


def test_the_guide_has_five_steps_one_per_page():
    assert [step.page for step in guidance.GUIDE] == list(guidance.PAGES)
    assert all(step.title and len(step.text) > 80 for step in guidance.GUIDE)


def test_needs_bound_follows_the_schemas():
    assert guidance.needs_bound(["lpa"], None)
    assert not guidance.needs_bound(["lpa"], 20)
    assert not guidance.needs_bound(["dpsense", "alpa"], None)  # DPSense needs none; ALPA's is optional
    assert not guidance.needs_bound([], None)


STATES = {
    "no data": Progress(),
    "nothing ticked": Progress(has_data=True),
    "Δ missing": Progress(has_data=True, ticked=3, needs_bound=True),
    "configured": Progress(has_data=True, ticked=3),
    "compared": Progress(has_data=True, ticked=3, compared=True),
    "released": Progress(has_data=True, ticked=3, compared=True, released=True),
    "exported": Progress(has_data=True, ticked=3, compared=True, released=True, exported=True),
}


@pytest.mark.parametrize("page, state, expected", [
    ("data", "no data", "Import data"),
    ("configure", "no data", "Import data"),
    ("plan", "no data", "needs no data"),
    ("data", "configured", "② Configure"),
    ("configure", "nothing ticked", "tick at least one mechanism"),
    ("configure", "Δ missing", "declare Δ"),
    ("configure", "configured", "③ Compare"),
    ("compare", "Δ missing", "declare Δ"),
    ("compare", "configured", "Run comparison"),
    ("compare", "compared", "④ Plan"),
    ("plan", "configured", "⑤ Release"),
    ("release", "configured", "Run release"),
    ("release", "released", "Export…"),
    ("data", "released", "⑤ Release"),
    ("release", "exported", "publish the exported files"),
])
def test_next_step_says_what_to_do_from_page_and_progress(page, state, expected):
    assert expected.lower() in next_step(page, STATES[state]).lower()


def test_next_step_differs_by_page_and_by_progress():
    configured = {page: next_step(page, STATES["configured"]) for page in guidance.PAGES}
    assert len(set(configured.values())) == len(guidance.PAGES)  # one sentence per page
    on_release = {name: next_step("release", state) for name, state in STATES.items()}
    assert len(set(on_release.values())) >= 5
    assert "publication" not in next_step("release", STATES["configured"]).lower()
    undeclared = Progress(has_data=True, ticked=1, publication_declared=False)
    assert "who the data is about" in next_step("release", undeclared)
    with pytest.raises(KeyError):
        next_step("elsewhere", STATES["configured"])
