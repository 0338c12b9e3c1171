"""The public privacy report: what was released, how, and what the guarantee means.

It is built from the release's public ``report`` (made by ``Mechanism.public_report`` and
:func:`dpdesk.mechanisms.publish.publish`), its budget split and parameters, the released
files' hashes and, as an example, the first published row — and from nothing else: never
the data, the release's ``internal`` facts or its diagnostics, and not the dataset
fingerprint (a function of the true data). So no value computed from the people's records
can reach it other than through the private release itself. The same HTML is turned into the PDF by
:func:`dpdesk.report.pdf.html_to_pdf` (pure Python, fonts shipped with dpdesk), which reads
the elements and classes written here; the HTML uses system fonts only (no network).

The plain-language guarantee: ε-DP bounds the ratio of the output's probabilities on
neighbouring datasets (one person added or removed) by e^ε, so by Bayes' rule anyone's
odds that a fact about one person holds can grow at most by the factor e^ε
(:func:`dpdesk.privacy.planner.odds_after`), whatever else they know.
"""

from __future__ import annotations

import html
import math
import re
from functools import lru_cache

from ..privacy.planner import odds_after
from ..mechanisms.publish import WHOLE_FORM
from .export import require_release

# what the sections below show; any other key of release.report goes to "Further details"
_KNOWN_KEYS = {"mechanism", "epsilon", "budget", "parameters", "public_facts", "randomness", "mode", "software",
               "created", "expected_error", "notes", "how_chosen", "choice", "ledger", "domain", "publication",
               "dataset_budget", "columns", "estimates", "unit_of_privacy", "margin_estimates"}
# plain labels of the keys mechanisms put in their report (nested or not); (parent, key) first, then the key
# alone; any other key is shown as its words (underscores turned into spaces), never as an identifier
DETAIL_LABELS = {
    "kept_coefficients": "Fourier coefficients kept (ρ)",
    "theta_over_epsilon_counts": "noise scale of the counts (θ/ε)",
    "quality_sensitivity": "sensitivity of the selection score",
    "alpha": "chosen scaling factor α",
    "theta": "chosen threshold θ",
    "sensitivity": "L1 sensitivity",
    "grid": "noise grid step",
    "scale": "noise scale",
    "transform": "transform",
    "form": "selection rule",
    "candidates": "candidates to choose from",
    "method": "method",
    "noise": "noise",
    "noise_scales": "noise scales",
    "selection": "private choice (exponential mechanism)",
    "chosen_group_size": "chosen group size w*",
    "summary": "summary",
    ("noise_scales", "alpha"): "factor α (item i's noise scale is α·γ_i)",
    ("noise_scales", "smallest"): "smallest noise scale",
    ("noise_scales", "largest"): "largest noise scale",
}
_ERROR_LABELS = {
    "noise_scale": "noise scale",
    "within_95": "95% of errors are at most",
    "mean_abs_error": "average error",
    "counts": "number of counts",
}
PRIORS = (0.01, 0.1, 0.25, 0.5, 0.9)
CHOICE_WARNING = ("Choosing a mechanism or a parameter because it had the smallest error on the true data is "
                  "itself a use of the data that the ε above does not cover.")
NOT_OBSERVED = "not recorded (the release was made by an earlier version of dpdesk)"
FOOTER = ("This report contains public facts only: the settings the data steward declared, structural facts the "
          "release treats as public (listed above), the hashes of the released files — and outputs of the "
          "differentially private release itself, covered by the ε above: the example row and anything the "
          "mechanism chose privately (a group size, a threshold, a noisy estimate), which it took from noisy values, "
          "not from the records. No number in it was read from the people's records directly.")


# -- small HTML helpers, shared with the internal report ---------------------------------------
def esc(value) -> str:
    return html.escape(str(value), quote=True)


def label_of(key, parent=None) -> str:
    """A report key as a reader's label: a known key's plain label, else its words."""
    if parent is not None and (parent, key) in DETAIL_LABELS:
        return DETAIL_LABELS[(parent, key)]
    if key in DETAIL_LABELS:
        return DETAIL_LABELS[key]
    key = str(key)
    if re.fullmatch(r"[A-Za-z0-9_]+", key):  # an identifier: its words (a label such as "τ_s (…)" stays)
        key = key.replace("_", " ")
    return " ".join(key.split())


def plural(count, one: str, many: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one: "1 item", "3 items"."""
    return f"{fmt(count)} {one if count == 1 else (many or one + 's')}"


def fmt(value) -> str:
    """A value as a reader wants to see it (numbers with thousands separators, at most 6 digits)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if hasattr(value, "tolist") and not isinstance(value, (list, dict)):
        value = value.tolist()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.6g}" if abs(value) >= 1e-4 else f"{value:.3g}"
    if isinstance(value, dict):
        return "; ".join(f"{label_of(k)}: {fmt(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v) for v in value)
    return str(value)


def table(rows, header=None, *, css: str = "", numeric=()) -> str:
    """An HTML table of already-escaped cell strings; ``numeric`` column indices align right.

    Header cells carry ``scope="col"``, so screen readers announce them with every cell.
    """
    attrs = f' class="{css}"' if css else ""
    parts = [f'<table{attrs} cellspacing="0" cellpadding="4">']
    right = ' class="num"'
    if header:
        parts.append("<tr>" + "".join(f'<th scope="col"{right if i in numeric else ""}>{h}</th>'
                                      for i, h in enumerate(header)) + "</tr>")
    for row in rows:
        parts.append("<tr>" + "".join(f"<td{right if i in numeric else ''}>{c}</td>"
                                      for i, c in enumerate(row)) + "</tr>")
    parts.append("</table>")
    return "\n".join(parts)


@lru_cache(maxsize=1)
def stylesheet() -> str:
    from ..paths import resources_dir

    return (resources_dir() / "report" / "report.css").read_text(encoding="utf-8")


def page(title: str, body: str, *, body_class: str = "") -> str:
    """A complete, self-contained HTML page (stylesheet inlined; nothing loaded from elsewhere)."""
    cls = f' class="{body_class}"' if body_class else ""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="generator" content="dpdesk">\n<title>{esc(title)}</title>\n'
            f"<style>\n{stylesheet()}</style>\n</head>\n<body{cls}>\n{body}\n</body>\n</html>\n")


def percent(p: float) -> str:
    text = f"{100 * p:.3g}"
    return f"{text}%"


# -- the report ----------------------------------------------------------------------------------
def public_report_html(release, hashes: dict) -> str:
    """The public privacy report of a secure release whose files have these sha256 ``hashes``.

    The first page answers three questions in plain words — what was published, how private
    it is, how accurate — and the sections after it give the details.
    """
    require_release(release)
    report = release.report
    mechanism = report.get("mechanism", {})
    epsilon = float(report.get("epsilon", release.epsilon))
    name = release.dataset_name or "dataset"
    created = report.get("created") or release.created
    publication = report.get("publication") or {}
    body = [
        "<h1>Privacy report</h1>",
        f'<p class="subtitle">Differentially private release of <b>{esc(name)}</b> · {esc(created)}</p>',
        "<h2>In short</h2>",
        _what_was_published(release, hashes),
        _how_private(release, epsilon),
        _how_accurate(release, publication),
        "<h2>The release at a glance</h2>",
        _key_facts(release, mechanism, epsilon, hashes),
        _guarantee(epsilon, _delta(report)),
        _publication(release, publication),
        _mechanism(mechanism),
        _budget(report.get("budget") or release.budget.as_list(), epsilon),
        _domain(report.get("domain")),
        _public_facts(report),
        _parameters(mechanism.get("id", release.mechanism), report.get("parameters", release.params), publication,
                    report),
        _choice(report),
        _expected_error(report.get("expected_error"), report.get("notes") or [], _delta(report)),
        _provenance(report, created),
        _files(hashes),
        _further(report, release),
        f'<p class="footer">Made with {esc(report.get("software", "dpdesk"))}. {esc(FOOTER)}</p>',
    ]
    return page(f"Privacy report — {name}", "\n".join(part for part in body if part))


def _delta(report: dict) -> float:
    return float(sum(float(step.get("delta") or 0.0) for step in report.get("budget") or []))


def _delta_text(delta: float) -> str:
    return f"{delta:.3g}"


def _guarantee_name(delta: float) -> str:
    """The guarantee in words: pure ε-DP only when no step spent any δ."""
    return f"(ε, δ)-differential privacy with δ = {_delta_text(delta)}" if delta > 0 else "ε-differential privacy"


def _guarantee_adjective(delta: float) -> str:
    return (f"(ε, δ)-differentially private with δ = {_delta_text(delta)}" if delta > 0
            else "ε-differentially private")


def _published_count(release) -> str:
    """What the release lists and how many, in words, from the declared domain (or the summary)."""
    facts = release.report.get("public_facts") or {}
    if release.values is not None or release.cells is None:  # (a report read back without its values: facts)
        d = facts.get("number of items (d)", len(release.values) if release.values is not None else None)
        shared = bool((release.report.get("publication") or {}).get("notes"))  # averages, not own counts
        what = "The published values of" if shared else "The noisy counts of"
        return f"{what} {plural(d, 'item')}" if d is not None else "The noisy figures"
    listed = len(release.cells)
    info = release.cells.info or {}
    m = facts.get("domain size m (cells)", info.get("domain_size"))
    if info.get("kind") == "sketch":
        return f"A noisy count sketch of {plural(listed, 'bucket')}, over a table of {plural(m, 'cell')},"
    what = ("range of cells", "ranges of cells") if info.get("kind") == "dyadic" else ("cell", "cells")
    return f"The noisy counts of {plural(listed, *what)}, listed from a table of {plural(m, 'cell')},"


def _what_was_published(release, hashes: dict) -> str:
    publication = release.report.get("publication") or {}
    domain = release.report.get("domain") or {}
    files = ", ".join(sorted(n for n in hashes if n.startswith("release."))) or "the release files"
    form = publication.get("form")
    # the release's own words for its form (a sketch's may be below 0); only the raw form gets a gloss
    form_text = (" as raw values (not rounded; they may be fractional or below 0)" if form == "raw values"
                 else f" as {esc(form)}" if form else "")
    text = (f"{esc(_published_count(release))}{form_text}, in {esc(files)}. "
            + (esc(domain.get("statement", "")) + " " if domain.get("statement") else ""))
    if release.cells is not None:
        text += " ".join(esc(note) for note in absent_cell_notes(publication.get("notes", [])))
    elif publication.get("notes"):  # ALPA: one average for every item; the GS family: one average per group
        text += esc(publication["notes"][0])
    return "<h3>What was published?</h3><p>" + text.strip() + "</p>"


def absent_cell_notes(notes: list[str]) -> list[str]:
    """The publication notes that say what a cell (range) missing from the published list means:
    those about cells not listed or left out, for the form that was published."""
    return [n for n in notes if re.search(r"\bnot listed\b|\b(?:are|is|were|was|be) left out\b", n, re.I)]


def _how_private(release, epsilon: float) -> str:
    report = release.report
    delta = _delta(report)
    posterior, _ = odds_after(epsilon, 0.5)
    guarantee = f"ε = {fmt(epsilon)}" + (f" and δ = {_delta_text(delta)}" if delta else "")
    kind = "(ε, δ)-differentially private" if delta else "differentially private"
    unit = (report.get("unit_of_privacy") or {}).get("statement")
    text = (f"{esc(unit)} " if unit else "") + (
            f"The release is {kind} with {esc(guarantee)}: whatever anyone believed about one "
            f"person before, and whatever else they know, seeing it can change their odds by at most a factor of "
            f"e<sup>ε</sup> = {math.exp(epsilon):.4g} — someone who thought a fact about a person 50/50 can be at "
            f"most {esc(percent(posterior))} sure of it afterwards.")
    if delta:
        text += (f" With probability at most δ = {_delta_text(delta)} the guarantee is weaker (see the budget "
                 "below).")
    total = report.get("dataset_budget")
    if total:
        cap = total.get("cap")
        spent_delta = float(total.get("delta_spent") or 0.0)
        spent = f"ε = {fmt(total.get('epsilon_spent'))}" + (f" and δ = {_delta_text(spent_delta)}"
                                                             if spent_delta > 0 else "")
        text += (f" Counting this one, the releases of {esc(total.get('dataset', release.dataset_name))} recorded in "
                 f"the data steward's budget ledger have spent {esc(spent)} in all "
                 f"(releases counted: {esc(fmt(total.get('releases')))}"
                 + (f"; the cap is ε = {esc(fmt(cap))}" if cap is not None else "; no cap") + "); releases about "
                 "the same people add up.")
    return "<h3>How private is it?</h3><p>" + text + "</p>"


def _example_row(release) -> tuple[list[str], list[str]] | None:
    """The first published row (a noisy value, public like the whole file): header and cells."""
    margins = release.margin95
    if release.values is not None:
        if len(release.values) == 0:
            return None
        header, row = ["item", "published count"], [esc(release.labels[0]), esc(fmt(release.values[0]))]
    else:
        cells = release.cells
        if cells is None or len(cells) == 0:
            return None
        labels = cells.info.get("labels")
        header = ["cell", "published value"]
        row = [esc(labels[0] if labels is not None else fmt(int(cells.indices[0]))), esc(fmt(cells.values[0]))]
        if cells.weights is not None:
            header.append("weight")
            row.append(esc(fmt(cells.weights[0])))
    if margins is not None:
        header.append("margin of error (95%)")
        row.append("±" + esc(fmt(margins[0])))
    elif (release.report.get("publication") or {}).get("margin_withheld"):
        header.append("margin of error (95%)")
        row.append("none published")
    return header, row


def _margin_range(margins) -> str:
    import numpy as np

    margins = np.asarray(margins, dtype=float)
    if margins.size == 0:
        return ""
    low, high = float(margins.min()), float(margins.max())
    return f"±{fmt(low)}" if low == high else f"from ±{fmt(low)} to ±{fmt(high)}"


def _how_accurate(release, publication: dict) -> str:
    """The first page's answer: what each margin promises and covers, in one sentence, then (shared averages) how far
    large counts are pulled towards their group's average — or why no margin is published."""
    parts = ["<h3>How accurate is it?</h3>"]
    what = "cell" if release.cells is not None else "item"
    if release.margin95 is not None:
        spread = _margin_range(release.margin95)
        covers = publication.get("margin_covers", "")
        covers = covers[len("The margin covers "):].rstrip(".") if covers.startswith("The margin covers ") else ""
        parts.append(f"<p>The true count of each {what} lies within ±margin95 (the last column) of its published value "
                     "95 times in 100" + (f": the margin covers {esc(covers)}" if covers else "")
                     + (f". Here the margins run {esc(spread)}." if spread else ".") + "</p>")
        if publication.get("margin_pull"):
            parts.append(f"<p>{esc(publication['margin_pull'])}</p>")
    elif publication.get("margin_withheld"):
        parts.append(f"<p>No margin of error is published: {esc(publication['margin_withheld'])}. The margin95 "
                     "column is empty.</p>")
    else:
        expected = release.report.get("expected_error") or {}
        parts.append("<p>" + esc(expected.get("text") or "This release was made before dpdesk published margins "
                                 "of error; see “Error to expect” below.") + "</p>")
    example = _example_row(release)
    if example is not None:
        header, row = example
        parts.append("<p>For example, the first row of the release:</p>"
                     + table([row], header, css="example", numeric=tuple(range(1, len(row)))))
    return "\n".join(parts)


def _key_facts(release, mechanism: dict, epsilon: float, hashes: dict) -> str:
    delta = _delta(release.report)
    rows = [
        ("Mechanism", f"<b>{esc(mechanism.get('name', release.mechanism))}</b>"),
        ("Privacy level", f'<span class="big">ε = {esc(fmt(epsilon))}</span> '
                          + (f"— {esc(_guarantee_name(delta))}, one person added or removed" if delta > 0
                             else "(ε-differential privacy, one person added or removed)")),
        ("Date", esc(release.report.get("created") or release.created)),
    ]
    publication = release.report.get("publication") or {}
    if publication.get("form"):
        rows.append(("Published values", esc(publication["form"])))
    ledger = release.report.get("ledger")
    if ledger:
        rows.append(("Budget ledger entry", f"#{esc(ledger['entry'])}"))
    if hashes:
        rows.append(("Released files", f"{esc(', '.join(sorted(hashes)))} (checksums below)"))
    return ('<table class="keyfacts" cellspacing="0" cellpadding="2">'
            + "".join(f'<tr><th scope="row" class="key">{k}</th><td>{v}</td></tr>' for k, v in rows) + "</table>")


def _guarantee(epsilon: float, delta: float = 0.0) -> str:
    factor = math.exp(epsilon)
    rows = []
    for prior in PRIORS:
        posterior, odds = odds_after(epsilon, prior)
        rows.append((percent(prior), f"{prior / (1 - prior):.3g} : 1", f"at most {percent(posterior)}",
                     f"at most {odds:.3g} : 1"))
    return (
        "<h2>What this protects, in plain words</h2>"
        "<p>Take any person and anything about them — for example, whether they are in the data, or whether they "
        "have a particular item. Whatever someone believed about it before seeing this release, and whatever else "
        "they know, the release can change their odds by at most a factor of "
        f"<b>e<sup>ε</sup> = {factor:.4g}</b> (up or down)"
        + (f", except with a probability of at most δ = {_delta_text(delta)}, when the guarantee is weaker"
           if delta > 0 else "")
        + ". The table shows what that means.</p>"
        + table(rows, ["Belief before", "Odds before", "Belief after seeing the release", "Odds after"],
                numeric=(1, 3))
        + "<p class=\"note\">The guarantee holds for one person. A group of k people is protected as if ε were "
          "k·ε; releases of the same data add up (their ε sum), which the steward's budget ledger tracks.</p>"
        + (f'<p class="note">This release is {esc(_guarantee_adjective(delta))}, not purely ε-differentially '
           "private: a step that found its list privately (see the budget below) spent δ. The odds above hold "
           "except with a probability of at most δ.</p>" if delta > 0 else ""))


def _publication(release, publication: dict) -> str:
    """What the numbers in the files are: whole or raw, how they hang together, what each column means."""
    if not publication:
        return ""
    from .export import column_meanings

    parts = ["<h2>What the published numbers are</h2>", f"<p>{esc(publication.get('statement', ''))}</p>"]
    parts += [f"<p>{esc(note)}</p>" for note in publication.get("notes", [])]
    has_values = release.values is not None or release.cells is not None
    meanings = column_meanings(release) if has_values else (release.report.get("columns") or {})
    rows = [(f'<span class="hash">{esc(name)}</span>', esc(meaning)) for name, meaning in meanings.items()]
    parts.append(table(rows, ["Column", "What it holds"]))
    parts.append(f"<p>{esc(publication.get('margin_covers', ''))}"
                 + (f" {esc(publication['margin_estimates'])}" if publication.get("margin_estimates") else "") + "</p>")
    return "\n".join(parts)


def _mechanism(mechanism: dict) -> str:
    rows = [("Name", esc(mechanism.get("name", ""))), ("Identifier", esc(mechanism.get("id", ""))),
            ("Paper", esc(mechanism.get("paper", ""))), ("Where in the paper", esc(mechanism.get("reference", ""))),
            ("Family", esc(mechanism.get("family", "")))]
    return ("<h2>Mechanism</h2>" + f"<p>{esc(mechanism.get('summary', ''))}</p>"
            + table([r for r in rows if r[1]]))


def _budget(steps: list, epsilon: float) -> str:
    rows = [(esc(s.get("step", "")), esc(fmt(s.get("epsilon"))), esc(percent(s.get("share", s["epsilon"] / epsilon))),
             esc(s.get("description", ""))) for s in steps]
    total = sum(float(s.get("epsilon", 0.0)) for s in steps)
    rows.append(("<b>total</b>", f"<b>{esc(fmt(total))}</b>", "<b>100%</b>", "sequential composition: the steps' ε add up"))
    return ("<h2>Privacy budget and its split</h2>"
            f"<p>The release spends ε = {esc(fmt(epsilon))} in all; every step that looks at the data spends "
            "its own share:</p>" + table(rows, ["Step", "ε", "Share", "What it does"], numeric=(1, 2)))


def _domain(domain: dict | None) -> str:
    """Where the published list of items (or cells) came from: it is part of the release."""
    if not domain:
        return ""
    if "attributes" in domain or "cells" in domain:  # a table of cells: attribute domains, not an item list
        after = (" Records with a value outside these domains were left out; a cell nobody is in has true count 0 "
                 "and gets noise like every other cell.")
    else:
        after = (" Items in the data but not in this list were left out before counting; a listed item that nobody "
                 "has has true count 0 and gets noise like every other item.")
    return "<h2>What the release lists</h2><p>" + esc(domain.get("statement", "")) + esc(after) + "</p>"


# facts that a private discovery of the item list (attribute domains) computed from the records
DISCOVERED_FACTS = {"number of items (d)": "size of the discovered list",
                    "item list": "private discovery",
                    "domain size m (cells)": "size of the discovered domains",
                    "cells": "private discovery"}
PRIVATE_MARKS = ("discovered privately", "estimated with a share of ε")


def fact_sources(report: dict) -> tuple[list[tuple[str, object]], list[tuple[str, object, str]]]:
    """The public facts split by where they came from: ``(declared, found)``.

    ``declared``: (fact, value) declared by the steward or structural, spending no budget.
    ``found``: (figure, value, how) computed from the records with a share of the release's
    budget — a privately discovered list and its size (``report['domain']['how'] ==
    'discovered'``), noisy estimates of n and ‖M‖₁ (``report['estimates']``), and any fact
    whose text says it was discovered privately or estimated with a share of ε.
    """
    facts = report.get("public_facts") or {}
    discovered = (report.get("domain") or {}).get("how") == "discovered"
    estimates = report.get("estimates") or {}
    declared, found = [], []
    for key, value in facts.items():
        if discovered and key in DISCOVERED_FACTS:
            found.append((key, value, DISCOVERED_FACTS[key]))
            continue
        if isinstance(value, str) and "; " in value and any(mark in value for mark in PRIVATE_MARKS):
            # a row joining several figures ("n estimated …; ‖M‖₁ declared …"): each part where it belongs
            parts = value.split("; ")
            kept = [part for part in parts if not any(mark in part for mark in PRIVATE_MARKS)]
            found += [(key, part, "noisy estimate") for part in parts if part not in kept
                      and not any(part.startswith(name) for name in estimates)]
            if kept:
                declared.append((key, "; ".join(kept)))
            continue
        if isinstance(value, str) and any(mark in value for mark in PRIVATE_MARKS):
            if not any(value.startswith(name) for name in estimates):
                found.append((key, value, "computed privately"))
            continue
        declared.append((key, value))
    for name, value in estimates.items():
        found.append((name, value, "noisy estimate (sets the summary's thresholds)"))
    return declared, found


def _public_facts(report: dict) -> str:
    declared, found = fact_sources(report)
    parts = ["<h2>Treated as public</h2>"]
    if declared:
        parts.append("<p>These facts were declared by the data steward or are structural facts of the data file. "
                     "The release treats them as public: it spends no privacy budget on them, so they must not be "
                     "secret.</p>" + table([(esc(k), esc(fmt(v))) for k, v in declared], ["Fact", "Value"]))
    else:
        parts.append("<p>Nothing beyond the parameters below was treated as public.</p>")
    if found:
        parts.append("<h3>Found privately from the data (paid for: see the budget table)</h3>"
                     "<p>These figures are not declared facts: they were computed from the people's records with a "
                     "share of this release's budget, listed in “Privacy budget and its split” above. They are "
                     "outputs of the differentially private release, covered by its guarantee, and are public like "
                     "the rest of it:</p>"
                     + table([(esc(k), esc(fmt(v)), esc(how)) for k, v, how in found],
                             ["Figure", "Value", "How it was found"]))
    return "\n".join(parts)


# a summary's settings the mechanism may derive when they are not given: the parameter and its label in
# report["summary"] (the value actually used)
USED_SETTINGS = {"threshold": "filter threshold θ", "tau": "sampling threshold τ", "size": "sample size s"}
# the declared facts a summary may estimate instead (FACT_NAMES of the sparse mechanisms)
ESTIMATED_PARAMS = {"nonzeros": "non-empty cells n", "total": "people ‖M‖₁"}


def _parameter_value(key: str, value, param, report: dict) -> str:
    """A parameter's value in words: "not declared"/"not set" for an empty option, and the value the
    mechanism actually used when it derived one (a θ or τ from a target size)."""
    summary = report.get("summary") or {}
    used = summary.get(USED_SETTINGS[key]) if key in USED_SETTINGS else None
    estimates = report.get("estimates") or {}
    if value is None:
        declared_kind = param is not None and param.title.lower().startswith("declared")
        if key == "bound":
            shown = "not declared (a person may hold every item)"
        elif key in ESTIMATED_PARAMS and ESTIMATED_PARAMS[key] in estimates:
            shown = (f"not declared; estimated privately: {fmt(estimates[ESTIMATED_PARAMS[key]])} (see “Found "
                     "privately from the data”)")
        else:
            shown = "not declared" if declared_kind else "not set"
        if used is not None:
            how = " (derived from the target size)" if (report.get("parameters") or {}).get("target_size") else ""
            shown = f"{shown}; used: {fmt(used)}{how}"
        return shown
    shown = fmt(value)
    if used is not None and fmt(used) != shown:
        shown += f"; used: {fmt(used)}"
    if key == "estimate_share" and "summary" in report and not estimates:
        shown += " (not used: nothing was estimated)"
    return shown


def _parameters(mechanism_id: str, parameters: dict, publication: dict | None = None,
                report: dict | None = None) -> str:
    """The mechanism's settings as released: the parameters its schema declares, with their labels,
    without options that only change the plots (an unknown mechanism: its set parameters, in words)."""
    from .. import mechanisms as registry
    from ..errors import ParameterError

    report = report or {}
    try:
        schema = {p.name: p for p in registry.get(mechanism_id).params}
    except ParameterError:  # a mechanism this version does not know: list its set parameters in words
        schema = None
    whole = (publication or {}).get("form") == WHOLE_FORM
    rows = []
    for key, value in parameters.items():
        param = schema.get(key) if schema is not None else None
        if schema is not None and param is None:
            continue  # an option of another summary method, not one this mechanism takes
        if schema is None and value is None:
            continue
        if param is not None and param.plots_only:
            continue  # changes what dpdesk computes for its plots, never what is published
        shown = _parameter_value(key, value, param, report)
        if key == "clamp" and whole and not value:
            # the mechanism did not clip, but publishing whole numbers did: say what the reader sees
            shown = ("no, not by the mechanism; the published whole numbers are not below 0, because a value below "
                     "0 is published as 0 (see “What the published numbers are”)")
        rows.append((esc(param.title if param else label_of(key)), f'<span class="hash">{esc(key)}</span>',
                     esc(shown)))
    if not rows:
        return "<h2>Parameters</h2><p>The mechanism takes no parameters.</p>"
    return "<h2>Parameters</h2>" + table(rows, ["Parameter", "Name", "Value"])


def _choice(report: dict) -> str:
    """What the steward states about the choice, and what dpdesk observed (older files: the statement only)."""
    choice = report.get("choice") or {}
    stated = choice.get("stated") or report.get("how_chosen") or "not stated"
    observed = choice.get("observed") or NOT_OBSERVED
    return ("<h2>How the mechanism was chosen</h2>"
            f'<p class="box">{esc(stated)}</p>'
            '<p class="note">As stated by the data steward.</p>'
            f"<p>What dpdesk observed: {esc(observed)}.</p>"
            f'<p class="note">{esc(CHOICE_WARNING)}</p>')


def _expected_error(expected, notes: list, delta: float = 0.0) -> str:
    parts = ["<h2>Error to expect</h2>"]
    if expected:
        if expected.get("text"):
            parts.append(f"<p>{esc(expected['text'])}</p>")
        rows = [(esc(label), esc(fmt(expected[key]))) for key, label in _ERROR_LABELS.items()
                if expected.get(key) is not None]
        rows += [(esc(key.replace("_", " ")), esc(fmt(value))) for key, value in expected.items()
                 if key not in _ERROR_LABELS and key != "text"]
        if rows:
            parts.append(table(rows, ["Quantity", "Value"], numeric=(1,)))
        parts.append('<p class="note">Computed from public settings only (ε, the declared bounds, the number of '
                     "released values) and, where the mechanism chose a setting privately (a group size, a threshold), "
                     "from that choice; never from the records directly.</p>")
    else:
        parts.append("<p>This mechanism's error depends on the data itself, so no figure computed from public "
                     "parameters alone can be given here.</p>")
    for note in notes:
        parts.append(f"<p>{esc(note)}</p>")
    if delta > 0 and notes:
        parts.append(f"<p>These notes are about the mechanism's own step. A step before it found its list "
                     f"privately and spent δ (see the budget), so the release as a whole is "
                     f"{esc(_guarantee_adjective(delta))}.</p>")
    return "\n".join(parts)


def _provenance(report: dict, created: str) -> str:
    rows = [("Randomness", esc(report.get("randomness", ""))), ("Mode", esc(report.get("mode", ""))),
            ("Software", esc(report.get("software", ""))), ("Date", esc(created))]
    ledger = report.get("ledger")
    if ledger:
        rows.append(("Budget ledger entry", f"#{esc(ledger['entry'])} of ledger {esc(ledger['ledger'])}, entry hash "
                                            f"<code>{esc(ledger['entry_hash'])}</code>. The data steward keeps this "
                                            "ledger: they (or an auditor they show it to) can check that these "
                                            "files are the ones recorded in this entry and that no release was "
                                            "taken out of the ledger since. A reader can check each file against "
                                            "its checksum below."))
    return ("<h2>How it was made</h2>" + table(rows)
            + '<p class="note">dpdesk samples integer noise exactly (discrete Laplace) and real-valued noise on a '
              "power-of-two grid, from the operating system's cryptographic random number generator, so the "
              "output is immune to floating-point attacks.</p>")


def _files(hashes: dict) -> str:
    if not hashes:
        return ""
    rows = [(esc(name), f'<span class="hash">{esc(digest)}</span>') for name, digest in sorted(hashes.items())]
    return ("<h2>Released files</h2><p>Anyone can check that a file is the one described here by comparing its "
            "sha256 checksum (for example with <span class=\"hash\">sha256sum</span>):</p>"
            + table(rows, ["File", "sha256"]))


def detail_value(value) -> str:
    """A detail's value for a reader: never a Python ``None``, ``nan`` or repr."""
    if hasattr(value, "tolist") and not isinstance(value, (list, dict)):
        value = value.tolist()
    if value is None:
        return "not set"
    if isinstance(value, float) and not math.isfinite(value):
        return "not available" if math.isnan(value) else ("unbounded" if value > 0 else "unbounded below")
    if isinstance(value, dict):
        return "; ".join(f"{label_of(k)}: {detail_value(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(detail_value(v) for v in value)
    return fmt(value)


def _further(report: dict, release=None) -> str:
    extra = {k: v for k, v in report.items() if k not in _KNOWN_KEYS}
    if not extra:
        return ""
    published = len(release.cells) if release is not None and getattr(release, "cells", None) is not None else None
    rows = []
    for key, value in extra.items():
        if isinstance(value, dict):  # a group of details: its label, then one labelled row per part
            rows.append((f"<b>{esc(label_of(key))}</b>", ""))
            for sub, part in value.items():
                label = label_of(sub, key)
                if key == "summary" and sub == "cells listed" and published is not None and published != part:
                    what = "ranges" if "dyadic levels" in value else "cells"
                    rows.append((f"– {what} in the summary (before the published form left some out)",
                                 esc(detail_value(part))))
                    rows.append((f"– {what} published", esc(detail_value(published))))
                    continue
                rows.append(("– " + esc(label), esc(detail_value(part))))
        else:
            rows.append((esc(label_of(key)), esc(detail_value(value))))
    return ("<h2>Further details</h2><p>More public details the mechanism reports:</p>"
            + table(rows, ["Detail", "Value"]))
