"""The public privacy report: what was released, how, and what the guarantee means.

It is built from the release's public ``report`` (made by ``Mechanism.public_report``),
its budget split and parameters, and the released files' hashes — and from nothing else:
never the data, the noisy values, the release's ``internal`` facts or its diagnostics,
and not the dataset fingerprint (a function of the true data). So no value computed from
the people's records can reach it. The same HTML is turned into the PDF by
:func:`dpdesk.report.pdf.html_to_pdf` (pure Python, fonts shipped with dpdesk), which reads
the elements and classes written here; the HTML uses system fonts only (no network).

The plain-language guarantee: ε-DP bounds the ratio of the output's probabilities on
neighbouring datasets (one person added or removed) by e^ε, so by Bayes' rule anyone's
odds that a fact about one person holds can grow at most by the factor e^ε
(:func:`dpdesk.evaluation.planner.odds_after`), whatever else they know.
"""

from __future__ import annotations

import html
import math
from functools import lru_cache

from ..evaluation.planner import odds_after
from .export import require_release

# what the sections below show; any other key of release.report goes to "Further details"
_KNOWN_KEYS = {"mechanism", "epsilon", "budget", "parameters", "public_facts", "randomness", "mode", "software",
               "created", "expected_error", "notes", "how_chosen", "ledger", "domain"}
_ERROR_LABELS = {
    "noise_scale": "noise scale",
    "within_95": "95% of errors are at most",
    "mean_abs_error": "average error",
    "counts": "number of counts",
}
PRIORS = (0.01, 0.1, 0.25, 0.5, 0.9)
CHOICE_WARNING = ("Choosing a mechanism or a parameter because it had the smallest error on the true data is "
                  "itself a use of the data that the ε above does not cover.")


# -- small HTML helpers, shared with the internal report ---------------------------------------
def esc(value) -> str:
    return html.escape(str(value), quote=True)


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
        return "; ".join(f"{k}: {fmt(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v) for v in value)
    return str(value)


def table(rows, header=None, *, css: str = "", numeric=()) -> str:
    """An HTML table of already-escaped cell strings; ``numeric`` column indices align right."""
    attrs = f' class="{css}"' if css else ""
    parts = [f'<table{attrs} cellspacing="0" cellpadding="4">']
    right = ' class="num"'
    if header:
        parts.append("<tr>" + "".join(f"<th{right if i in numeric else ''}>{h}</th>"
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
    """The public privacy report of a secure release whose files have these sha256 ``hashes``."""
    require_release(release)
    report = release.report
    mechanism = report.get("mechanism", {})
    epsilon = float(report.get("epsilon", release.epsilon))
    name = release.dataset_name or "dataset"
    created = report.get("created") or release.created
    body = [
        "<h1>Privacy report</h1>",
        f'<p class="subtitle">Differentially private release of <b>{esc(name)}</b> · {esc(created)}</p>',
        _key_facts(release, mechanism, epsilon, hashes),
        _guarantee(epsilon),
        _mechanism(mechanism),
        _budget(report.get("budget") or release.budget.as_list(), epsilon),
        _domain(report.get("domain")),
        _public_facts(report.get("public_facts") or {}),
        _parameters(mechanism.get("id", release.mechanism), report.get("parameters", release.params)),
        _choice(report.get("how_chosen")),
        _expected_error(report.get("expected_error"), report.get("notes") or []),
        _provenance(report, created),
        _files(hashes),
        _further(report),
        '<p class="footer">Made with ' + esc(report.get("software", "dpdesk")) + ". This report contains only "
        "public facts: the parameters and bounds the data steward declared, structural facts of the data file "
        "that the release treats as public (listed above), and the hashes of the released files. No number in it "
        "was computed from the people's records.</p>",
    ]
    return page(f"Privacy report — {name}", "\n".join(part for part in body if part))


def _key_facts(release, mechanism: dict, epsilon: float, hashes: dict) -> str:
    rows = [
        ('<td class="key">Mechanism</td>', f"<td><b>{esc(mechanism.get('name', release.mechanism))}</b></td>"),
        ('<td class="key">Privacy level</td>', f'<td><span class="big">ε = {esc(fmt(epsilon))}</span> '
                                                f"(ε-differential privacy, one person added or removed)</td>"),
        ('<td class="key">Date</td>', f"<td>{esc(release.report.get('created') or release.created)}</td>"),
    ]
    ledger = release.report.get("ledger")
    if ledger:
        rows.append(('<td class="key">Budget ledger entry</td>', f"<td>#{esc(ledger['entry'])}</td>"))
    if hashes:
        rows.append(('<td class="key">Released files</td>',
                     f"<td>{esc(', '.join(sorted(hashes)))} (checksums below)</td>"))
    return ('<table class="keyfacts" cellspacing="0" cellpadding="2">'
            + "".join(f"<tr>{k}{v}</tr>" for k, v in rows) + "</table>")


def _guarantee(epsilon: float) -> str:
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
        f"<b>e<sup>ε</sup> = {factor:.4g}</b> (up or down). The table shows what that means.</p>"
        + table(rows, ["Belief before", "Odds before", "Belief after seeing the release", "Odds after"],
                numeric=(1, 3))
        + "<p class=\"note\">The guarantee holds for one person. A group of k people is protected as if ε were "
          "k·ε; releases of the same data add up (their ε sum), which the steward's budget ledger tracks.</p>")


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
    return ("<h2>What the release lists</h2><p>" + esc(domain.get("statement", "")) + " Items in the data but not "
            "in this list were left out before counting; listed items that nobody has are counted as 0.</p>")


def _public_facts(facts: dict) -> str:
    if not facts:
        return ("<h2>Treated as public</h2><p>Nothing beyond the parameters below was treated as public.</p>")
    rows = [(esc(key), esc(fmt(value))) for key, value in facts.items()]
    return ("<h2>Treated as public</h2>"
            "<p>These facts were declared by the data steward or are structural facts of the data file. The "
            "release treats them as public: it spends no privacy budget on them, so they must not be secret.</p>"
            + table(rows, ["Fact", "Value"]))


def _parameters(mechanism_id: str, parameters: dict) -> str:
    from .. import mechanisms as registry
    from ..errors import ParameterError

    try:
        labels = {p.name: p.title for p in registry.get(mechanism_id).params}
    except ParameterError:  # a mechanism this version does not know: list its parameters by name
        labels = {}
    rows = [(esc(labels.get(key, key)), f'<span class="hash">{esc(key)}</span>', esc(fmt(value)))
            for key, value in parameters.items()]
    if not rows:
        return "<h2>Parameters</h2><p>The mechanism takes no parameters.</p>"
    return "<h2>Parameters</h2>" + table(rows, ["Parameter", "Name", "Value"])


def _choice(how_chosen) -> str:
    text = how_chosen or "not stated"
    return ("<h2>How the mechanism was chosen</h2>"
            f'<p class="box">{esc(text)}</p>'
            f'<p class="note">As stated by the data steward. {esc(CHOICE_WARNING)}</p>')


def _expected_error(expected, notes: list) -> str:
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
        parts.append('<p class="note">Computed from the public parameters only (ε, the declared bounds and the '
                     "number of released values), not from the data.</p>")
    else:
        parts.append("<p>This mechanism's error depends on the data itself, so no figure computed from public "
                     "parameters alone can be given here.</p>")
    for note in notes:
        parts.append(f"<p>{esc(note)}</p>")
    return "\n".join(parts)


def _provenance(report: dict, created: str) -> str:
    rows = [("Randomness", esc(report.get("randomness", ""))), ("Mode", esc(report.get("mode", ""))),
            ("Software", esc(report.get("software", ""))), ("Date", esc(created))]
    ledger = report.get("ledger")
    if ledger:
        rows.append(("Budget ledger entry", f"#{esc(ledger['entry'])} of ledger {esc(ledger['ledger'])}, entry hash "
                                            f"<code>{esc(ledger['entry_hash'])}</code> (the steward's ledger can be "
                                            "checked against this release: <code>dpdesk ledger verify --release "
                                            "FOLDER</code>)"))
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


def _further(report: dict) -> str:
    extra = {k: v for k, v in report.items() if k not in _KNOWN_KEYS}
    if not extra:
        return ""
    rows = [(esc(key.replace("_", " ")), esc(fmt(value))) for key, value in extra.items()]
    return ("<h2>Further details</h2><p>More public details the mechanism reports:</p>"
            + table(rows, ["Detail", "Value"]))
