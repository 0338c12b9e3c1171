"""What the app tells a steward who has never heard of differential privacy: the help entries
(pages, words, mechanisms), searching them, the first-run guide's five steps and the next
useful step for the status bar. Plain data and functions, no Qt: the GUI shows them.

Help entries are Markdown files in ``resources/help/`` (installed as ``dpdesk.resources.help``):

* ``pages/<page>.md`` — one per step of the main window (F1 opens the current page's);
* ``terms/<id>.md`` — the glossary;
* ``mechanisms/<id>.md`` — two or three plain sentences per registered mechanism, whose
  title and source come from the registry (``dpdesk.mechanisms``), so names are never
  written twice;
* ``pictures/<name>.svg`` — a small diagram per mechanism (and some words), made by
  ``scripts/help_pictures.py`` in the colours below, which the GUI swaps for the palette's.

An entry file starts with ``key: value`` lines (``title``, ``keywords``, ``picture``, ``see``),
then a blank line, then its Markdown body. Links to other entries are written ``help:<id>``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import mechanisms as registry
from .paths import resources_dir

# The colours of the help pictures. The GUI replaces each by a colour of the current palette
# (ink → text, paper → base, muted and faint → blends of the two), so a picture reads on a dark
# desktop too; the accents (Okabe–Ito) stay, made visible on the palette's base.
PICTURE_INK = "#1a1a1a"
PICTURE_MUTED = "#8c8c8c"
PICTURE_FAINT = "#dddddd"
PICTURE_PAPER = "#ffffff"
PICTURE_ACCENTS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00")

PAGES = ("data", "configure", "compare", "plan", "release")
PAGE_TITLES = {"data": "① Data", "configure": "② Configure", "compare": "③ Compare", "plan": "④ Plan",
               "release": "⑤ Release"}
KIND_ORDER = ("page", "term", "mechanism")


def help_dir() -> Path:
    return resources_dir() / "help"


@dataclass(frozen=True)
class HelpEntry:
    """One entry of the help: a page of the app, a word of the glossary or a mechanism."""

    id: str
    kind: str  # "page", "term" or "mechanism"
    title: str
    body: str  # Markdown
    keywords: tuple[str, ...] = ()
    picture: Path | None = None
    see: tuple[str, ...] = ()
    source: str = ""  # for mechanisms: the paper and section, from the registry
    group: str = ""   # for mechanisms: the kind of data they publish

    @property
    def text(self) -> str:
        """Everything a search looks at."""
        return " ".join((self.id, self.title, " ".join(self.keywords), self.body, self.source, self.group))


def _read(path: Path) -> tuple[dict, str]:
    """The ``key: value`` header lines and the Markdown body of an entry file."""
    header, body = path.read_text(encoding="utf-8").split("\n\n", 1)
    fields = {}
    for line in header.splitlines():
        key, _, value = line.partition(":")
        if not _ or not key.strip():
            raise ValueError(f"{path}: the header line {line!r} is not 'key: value'")
        fields[key.strip().lower()] = value.strip()
    return fields, body.strip()


def _listed(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _picture(fields: dict, default: str) -> Path | None:
    name = fields.get("picture", default)
    path = help_dir() / "pictures" / (name if name.endswith(".svg") else f"{name}.svg")
    return path if path.is_file() else None


DATA_GROUPS = {"incidence": "Mechanisms for people × items (counts per item)",
               "cells": "Mechanisms for tables of cells (counts per cell)"}


@lru_cache(maxsize=1)
def help_entries() -> tuple[HelpEntry, ...]:
    """Every entry, in the order the help lists them: pages, words, then mechanisms in registry order."""
    entries = []
    for page in PAGES:
        fields, body = _read(help_dir() / "pages" / f"{page}.md")
        entries.append(HelpEntry(f"page-{page}", "page", fields["title"], body, _listed(fields.get("keywords", "")),
                                 _picture(fields, f"page-{page}"), _listed(fields.get("see", ""))))
    terms = []
    for path in sorted((help_dir() / "terms").glob("*.md")):
        fields, body = _read(path)
        terms.append(HelpEntry(path.stem, "term", fields["title"], body, _listed(fields.get("keywords", "")),
                               _picture(fields, path.stem), _listed(fields.get("see", ""))))
    entries += sorted(terms, key=lambda e: _sort_key(e.title))
    for mechanism in registry.all_mechanisms():
        path = help_dir() / "mechanisms" / f"{mechanism.id}.md"
        if not path.is_file():
            continue  # tests/gui/test_help.py insists every registered mechanism has one
        fields, body = _read(path)
        entries.append(HelpEntry(
            mechanism.id, "mechanism", mechanism.name, body,
            (mechanism.id, mechanism.family, *_listed(fields.get("keywords", ""))),
            _picture(fields, mechanism.id), _listed(fields.get("see", "")),
            source=f"{mechanism.paper}, {mechanism.reference}", group=DATA_GROUPS.get(mechanism.data_kind, "")))
    return tuple(entries)


def help_entry(entry_id: str) -> HelpEntry:
    for entry in help_entries():
        if entry.id == entry_id:
            return entry
    raise KeyError(entry_id)


def page_entry_id(page: str) -> str:
    """The help entry F1 opens on a page of the main window."""
    if page not in PAGES:
        raise KeyError(page)
    return f"page-{page}"


def _sort_key(title: str) -> str:
    """Words sort by their name in letters: "ε (epsilon) — …" under e, "Δ (delta) — …" under d."""
    named = re.match(r"^\S+\s*\(([^)]+)\)", title)
    return _fold(named.group(1) if named else title)


def _fold(text: str) -> str:
    """Lower case without accents, so that "reponse" finds "réponse" and "Epsilon" finds "epsilon"."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def matches(entry: HelpEntry, query: str) -> bool:
    """Whether every word of ``query`` occurs in the entry (its title, keywords, text or source)."""
    words = [w for w in re.split(r"\s+", _fold(query)) if w]
    haystack = _fold(entry.text)
    return all(word in haystack for word in words)


def search(query: str) -> list[HelpEntry]:
    """The entries that match ``query`` (all of them for an empty query), in the help's order."""
    return [entry for entry in help_entries() if matches(entry, query)]


def entry_markdown(entry: HelpEntry, picture_url: str | None = None) -> str:
    """The entry as one Markdown document: title, picture, text, source and links to related entries."""
    parts = [f"# {entry.title}"]
    if picture_url:
        parts.append(f"![{entry.title}]({picture_url})")
    parts.append(entry.body)
    if entry.source:
        parts.append(f"*Source: {entry.source}.*")
    related = []
    for other in entry.see:
        try:
            related.append(f"[{help_entry(other).title}](help:{other})")
        except KeyError:
            continue
    if related:
        parts.append("See also: " + " · ".join(related))
    return "\n\n".join(parts) + "\n"


# -- the first-run guide -------------------------------------------------------------------------
@dataclass(frozen=True)
class GuideStep:
    page: str  # one of PAGES
    title: str
    text: str  # rich text: what to do on that page, on the sample data
    general: str = ""  # the same for the steward's own data (no word of baskets); "" when ``text`` fits any data

    def text_for(self, on_sample: bool) -> str:
        """What the step says: about the sample's baskets while the sample is loaded (or nothing is)."""
        return self.text if on_sample or not self.general else self.general


GUIDE = (
    GuideStep("data", "① Data: open the sample",
              "dpdesk publishes <b>counts</b> — how many people bought each product, visited each place — with "
              "random noise that protects every person in them. To try it on data that is public anyway, press "
              "<b>Open the sample data</b>: 9,835 shopping baskets over 169 products.<br><br>In the import wizard "
              "press <b>Next</b> to accept its guesses. On the last page name the people the data is about, and "
              "say that the product names are public anyway (they are a shop's catalogue); then press "
              "<b>Use this data</b>.",
              "dpdesk publishes <b>counts</b> — how many people have each item, or fall in each cell of a table — "
              "with random noise that protects every person in them.<br><br>Your data is loaded: check that the "
              "summary below matches what you expect (how many people, how many items). These figures describe "
              "the true data: they are for you only and are never published."),
    GuideStep("configure", "② Configure: declare Δ and choose ε",
              "Three mechanisms are ticked already: they are different ways of adding the noise.<br><br>"
              "Declare <b>Δ</b>, the most products one basket may count: say <b>20</b>, from what you know about "
              "shopping, never from the data. Baskets with more keep a random 20.<br><br>Leave <b>ε</b> at "
              "0.69 (ln 2): someone who thought it 50/50 that a person is in the data could then believe it at "
              "most 67/33. Smaller ε: more privacy, more noise.",
              "Declare what you know about the data from how it was collected, never from the data itself: "
              "<b>Δ</b>, the most items one person may contribute (people with more keep a random Δ of them), "
              "and about how many items a typical person holds. A table of cells needs neither: each person "
              "counts once.<br><br>dpdesk then recommends a mechanism — a way of adding the noise — from those "
              "facts; <b>Use the recommendation</b> ticks it.<br><br>Choose <b>ε</b>: 0.69 (ln 2) means someone "
              "who thought it 50/50 that a person is in the data could then believe it at most 67/33. Smaller ε: "
              "more privacy, more noise."),
    GuideStep("compare", "③ Compare: try them out",
              "Choose <b>a synthetic stand-in</b> (made from the facts you declared), so that the comparison uses "
              "none of the true data, then press <b>Run comparison</b> (Ctrl+R).<br><br>The plot shows each "
              "mechanism's error at each ε: lower is better, the shaded band is how sure the average is. Nothing "
              "here is published and no budget is spent."),
    GuideStep("plan", "④ Plan: how accurate will it be?",
              "Nothing on this page uses the data. Say what you need — for example counts of at least "
              "<b>1,000</b> within <b>10%</b> of the truth, failing with probability <b>0.05</b> — and read "
              "the ε that needs. <b>Use this ε in Configure</b> takes it over; or keep yours."),
    GuideStep("release", "⑤ Release: publish once",
              "Pick the mechanism you chose and press <b>Run release</b>: dpdesk draws secure random noise and "
              "records the ε spent in the budget ledger. Then <b>Export…</b> writes the noisy counts, each with "
              "its margin of error, and the public privacy report to publish with them.<br><br>That is the "
              "whole path. <b>F1</b> explains the page you are on; <b>Help → Help and glossary</b> explains "
              "every word."),
)


# -- the next useful step ------------------------------------------------------------------------
@dataclass(frozen=True)
class Progress:
    """How far the steward has got: the facts the next step depends on."""

    has_data: bool = False
    ticked: int = 0                 # mechanisms ticked on Configure
    needs_bound: bool = False       # a ticked mechanism needs Δ and none is declared
    compared: bool = False
    released: bool = False
    exported: bool = False
    publication_declared: bool = True  # who the data is about and where the published list comes from
    cells: bool = False             # a table of cells (no Δ)


def needs_bound(mechanism_ids, bound: int | None) -> bool:
    """Whether one of these mechanisms requires the declared bound Δ and none is declared (from their schemas)."""
    if bound is not None:
        return False
    return any(param.name == "bound" and param.required
               for mechanism_id in mechanism_ids for param in registry.get(mechanism_id).params)


IMPORT = "import data: File → Import data… (Ctrl+O), or Open the sample data (Ctrl+Shift+D) to try dpdesk"


def next_step(page: str, progress: Progress) -> str:
    """One sentence for the status bar: the next useful thing to do, seen from ``page``."""
    p = progress
    if page not in PAGES:
        raise KeyError(page)
    if page == "plan" and not p.has_data:
        return ("The planner needs no data: set ε and the accuracy you need. To release, first " + IMPORT + ".")
    if not p.has_data:
        return "Next: " + IMPORT + "."
    if p.exported:
        return ("Done: publish the exported files with the public privacy report; keep the internal report "
                "inside your organisation. Another release spends more of the budget (⑤ Release, Ctrl+5).")
    if p.released:
        if page == "release":
            return "Next: press Export… to write the noisy counts and the public privacy report."
        return "Next: ⑤ Release (Ctrl+5) → Export… writes the release you drew and its privacy report."
    configure_first = ("tick at least one mechanism" if not p.ticked else "declare Δ, the most items one person "
                       "may contribute (from what you know, not from the data)")
    ready = p.ticked and not p.needs_bound
    if page == "data":
        return ("Next: ② Configure (Ctrl+2): tick mechanisms, declare Δ and choose ε." if not p.cells else
                "Next: ② Configure (Ctrl+2): tick mechanisms and choose ε.")
    if page == "configure":
        if not ready:
            return f"Next: {configure_first}."
        return "Next: ③ Compare (Ctrl+3) to see how much error each mechanism makes, or ⑤ Release (Ctrl+5)."
    if page == "compare":
        if not ready:
            return f"Next: on ② Configure (Ctrl+2), {configure_first}."
        if not p.compared:
            return ("Next: press Run comparison (Ctrl+R) — on a stand-in, so that choosing from the results "
                    "uses none of the true data.")
        return "Next: ④ Plan (Ctrl+4) to check the accuracy you need, or ⑤ Release (Ctrl+5) with the mechanism you chose."
    if page == "plan":
        if not ready:
            return f"Next: on ② Configure (Ctrl+2), {configure_first}."
        return "Next: ⑤ Release (Ctrl+5): pick one mechanism and ε, then Run release."
    # release
    if not ready:
        return f"Next: on ② Configure (Ctrl+2), {configure_first}."
    if not p.publication_declared:
        return "Next: say who the data is about and where the published list of items comes from (Change…)."
    return "Next: pick one mechanism and ε, then press Run release (it spends ε from the budget ledger)."
