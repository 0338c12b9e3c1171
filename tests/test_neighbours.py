"""The neighbour test at the level of the published files (issue 13, rows S1, S2, C3).

A release on D and on D′ = D plus one person must publish the same everything except the
noisy values (and hashes, dates and ledger references). The person added here holds an item
nobody else has (``secret_disease``) — or, for cell tables, a value nobody else has — which
today's declared domains must keep out of every public file with probability 1, for every
mechanism. Per-mechanism fields (grids, thresholds, noise scales) are checked by the
mechanism families' own neighbour tests in tests/mechanisms/.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk import cli
from dpdesk.mechanisms.discovery import discover_items, discovery_threshold
from dpdesk.errors import DataError, ParameterError
from dpdesk.privacy.ledger import Ledger
from dpdesk.privacy.randomness import SeededRandom
from dpdesk.workflow import release_to_files

SECRET = "secret_disease"
LABELS = [f"item{j}" for j in range(12)]
# the metadata fields that describe the release rather than carry its noise
STRUCTURAL = ("mechanism", "epsilon", "budget", "parameters", "public_facts", "domain", "randomness", "mode",
              "software", "expected_error", "notes", "how_chosen", "dataset", "unit_of_privacy")
CELL_SETTINGS = {"filter": {"threshold": 2}, "filter2": {"threshold": 2}, "threshold": {"tau": 3},
                 "priority": {"size": 5}, "filter-threshold": {"threshold": 1, "tau": 3},
                 "filter-priority": {"threshold": 1, "size": 5}, "dyadic": {"method": "filter", "threshold": 2},
                 "sketch": {"width": 8, "depth": 2}}


def neighbours():
    """D (60 people over 12 items) and D′ = D plus one person holding item3 and the secret item."""
    rng = np.random.default_rng(4)
    dense = (rng.random((60, 12)) < 0.3).astype(np.int64)
    dense[np.arange(60), np.arange(60) % 12] = 1
    d = dpdesk.from_matrix(sp.csr_matrix(dense), LABELS, name="clinic")
    extra = np.zeros((1, 13), dtype=np.int64)
    extra[0, 3] = extra[0, 12] = 1
    d_plus = dpdesk.from_matrix(sp.vstack([sp.hstack([sp.csr_matrix(dense), sp.csr_matrix((60, 1))]),
                                           sp.csr_matrix(extra)]), LABELS + [SECRET], name="clinic")
    return d, d_plus


def incidence_cases():
    cases = []
    for mechanism in dpdesk.mechanisms():
        if mechanism.data_kind != "incidence" or not mechanism.releasable:
            continue
        params = {}
        for p in mechanism.params:
            if p.required and p.name == "bound":
                params["bound"] = 3
            elif p.required and p.name == "index":
                params["index"] = "uniform"
        if mechanism.id == "fpa":
            params["rho"] = 3
        cases.append(pytest.param(mechanism.id, params, id=mechanism.id))
    return cases


def published(folder) -> dict:
    """What an export publishes, without the noisy values, hashes, dates and the ledger reference."""
    metadata = json.loads((folder / "release.json").read_text(encoding="utf-8"))
    table = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    out = {key: metadata.get(key) for key in STRUCTURAL}
    # a step's description may quote a noisy choice (GS's group size w*, from the noisy sample)
    out["budget"] = [{k: v for k, v in step.items() if k != "description"} for step in metadata["budget"]]
    out["columns"] = list(table.columns)
    if "item" in table.columns:
        out["items"] = list(table["item"])
    out["json keys"] = sorted(metadata)
    report = (folder / "privacy-report.html").read_text(encoding="utf-8")
    report = re.sub(r"[0-9a-f]{64}", "HASH", report)
    report = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", "DATE", report)
    report = re.sub(r"#\d+ of ledger [0-9a-f-]+", "#N of ledger L", report)
    report = re.sub(r"entry</td><td>#\d+", "entry</td><td>#N", report)
    # numbers that come from the noise (GS quotes its noisy group size w*) may differ; the
    # labels are compared above, exactly
    out["report"] = re.sub(r"\d[\d,.]*", "N", report)
    # margins that follow noisy group or cluster sizes (GS's w*, AHP's clusters) may all be equal or not
    out["report"] = out["report"].replace("from ±N to ±N", "±N")
    if out["expected_error"]:
        out["expected_error"] = re.sub(r"\d[\d,.]*", "N", json.dumps(out["expected_error"], sort_keys=True))
    # what the margins cover, or why there are none (issue 28): its figures come from noisy estimates
    out["publication"] = re.sub(r"-?\d[\d,.]*", "N", json.dumps(metadata.get("publication"), sort_keys=True,
                                                                 ensure_ascii=False))
    out["margin estimates"] = sorted(metadata.get("margin_estimates") or {})
    return out


def release_both(mechanism_id, params, tmp_path, items, **options):
    d, d_plus = neighbours()
    results = []
    for name, data in (("d", d), ("d_plus", d_plus)):
        declared = dpdesk.declare(data, items) if not isinstance(items, str) or items != "from-data" else \
            dpdesk.declare(data, "from-data", items_are_public=True)
        folder = tmp_path / name
        release_to_files(declared, mechanism_id, 1.0, params, folder, dataset="clinic",
                         reports=("html",), **options)
        results.append(published(folder))
    return results


@pytest.mark.parametrize("mechanism_id,params", incidence_cases())
def test_a_declared_item_list_keeps_a_rare_item_out_of_every_public_file(mechanism_id, params, tmp_path,
                                                                          dpdesk_home):
    """S1: with the list declared, D and D′ publish the same labels, d and report — the secret
    item appears nowhere, with probability 1 (before, its label was published)."""
    first, second = release_both(mechanism_id, params, tmp_path, LABELS)
    for key in first:
        assert first[key] == second[key], key
    assert first["items"] == LABELS
    assert SECRET not in json.dumps(second) and SECRET not in (tmp_path / "d_plus" / "release.csv").read_text()
    assert SECRET not in (tmp_path / "d_plus" / "release.json").read_text()


def test_a_declared_range_and_a_label_file(tmp_path, dpdesk_home):
    d, d_plus = neighbours()
    labels = tmp_path / "items.txt"
    labels.write_text("\ufeff" + "\n".join(LABELS) + "\n\n", encoding="utf-8")  # a BOM and a blank line
    for data, out in ((d, "a"), (d_plus, "b")):
        assert cli.main(["release", str(_pairs_csv(tmp_path / f"{out}.csv", data)), "--mechanism", "lpa",
                         "--epsilon", "1", "--bound", "3", "--items", str(labels), "--dataset", out,
                         "--out", str(tmp_path / out)]) == 0
    a = pd.read_csv(tmp_path / "a" / "release.csv", dtype=str)
    b = pd.read_csv(tmp_path / "b" / "release.csv", dtype=str)
    assert list(a["item"]) == list(b["item"]) == LABELS
    numbered = dpdesk.from_matrix(np.eye(4, dtype=int), ["0", "1", "2", "7"], name="ids")
    release = dpdesk.release(dpdesk.declare(numbered, "range:5"), "lpa", epsilon=1, bound=1)
    assert list(release.labels) == ["0", "1", "2", "3", "4"]  # 7 is outside: dropped, 3 and 4 counted as 0


def _pairs_csv(path, data):
    rows, cols = data.matrix.nonzero()
    path.write_text("person,item\n" + "".join(f"p{r},{data.item_labels[c]}\n" for r, c in zip(rows, cols)))
    return path


def test_items_outside_the_list_are_dropped_and_counted_internally(dpdesk_home, tmp_path):
    _, d_plus = neighbours()
    declared = dpdesk.declare(d_plus, LABELS)
    assert declared.n_items == 12 and list(declared.item_labels) == LABELS
    facts = declared.domain.internal
    assert facts["items dropped (not in the declared list)"] == 1 and facts["item occurrences dropped"] == 1
    assert facts["people who lost items"] == 1
    assert np.array_equal(declared.column_counts, d_plus.column_counts[:12])
    release_to_files(declared, "lpa", 1.0, {"bound": 3}, tmp_path / "out", internal_report=True, reports=("html",))
    internal = next((dpdesk_home / "internal-reports").glob("*.html")).read_text(encoding="utf-8")
    public = (tmp_path / "out" / "privacy-report.html").read_text(encoding="utf-8")
    assert "items dropped" in internal and "items dropped" not in public


def test_without_a_declared_domain_nothing_is_read_or_spent(tmp_path, dpdesk_home, monkeypatch, capsys):
    d, _ = neighbours()
    csv = _pairs_csv(tmp_path / "d.csv", d)
    read = []
    monkeypatch.setattr(dpdesk.data.loader, "open_source", lambda *a, **k: read.append(a))
    for extra, message in (([], "--items"), (["--items", "from-data"], "--items-are-public"),
                           (["--items", "discover"], "--delta"), (["--items", "discover", "--delta", "0"], "between 0 and 1"),
                           (["--items", "discover", "--delta", "1"], "between 0 and 1"),
                           (["--items", str(tmp_path / "missing.txt")], "does not exist")):
        assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "1", "--bound", "3", *extra,
                         "--out", str(tmp_path / "out")]) == 2
        assert message in capsys.readouterr().err
    assert read == [] and not (tmp_path / "out").exists()
    assert Ledger.open().totals() == {}


@pytest.mark.parametrize("content, message", [
    ("a\nb\na\n", "line 3: the label 'a' is listed twice (first on line 1)"),
    ("\n\n  \n", "the file is empty"),
    ("\n\n  \nx\n", None),
    (b"caf\xe9\nna\xefve\n", None),  # Latin-1: read, not refused
    (b"ok\n\x81\x8d bad\n", "line 2"),
])
def test_label_files(tmp_path, content, message):
    from dpdesk.data.domain import read_label_file

    path = tmp_path / "labels.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    if message is None:
        assert read_label_file(path) == (["café", "naïve"] if isinstance(content, bytes) else ["x"])
        return
    with pytest.raises(DataError, match=re.escape(message)):
        read_label_file(path)


def test_a_csv_label_file_with_a_header(tmp_path):
    from dpdesk.data.domain import read_label_file

    path = tmp_path / "catalogue.csv"
    path.write_text("code,item,price\n1,milk,2\n2,\"bread, brown\",3\n")
    assert read_label_file(path) == ["milk", "bread, brown"]


# -- cells (S2) --------------------------------------------------------------------------------------------
def cell_neighbours(tmp_path):
    """Records over (sex, region): D′ adds a person with a region nobody else has."""
    rows = ["sex,region"] + [f"{'FM'[k % 2]},{['north', 'south', 'east'][k % 3]}" for k in range(40)]
    d = tmp_path / "d.csv"
    d.write_text("\n".join(rows) + "\n")
    d_plus = tmp_path / "d_plus.csv"
    d_plus.write_text("\n".join(rows + ["F,atlantis"]) + "\n")
    domains = tmp_path / "domains.json"
    domains.write_text(json.dumps({"sex": ["F", "M"], "region": ["north", "south", "east", "west"]}))
    return d, d_plus, domains


@pytest.mark.parametrize("mechanism_id", ["geometric", *CELL_SETTINGS])
def test_declared_cell_domains_publish_the_same_cells_for_neighbours(mechanism_id, tmp_path, dpdesk_home):
    """S2: the cell labels and m come from the declared domains; a value outside them drops the
    record (never a refusal, which would itself depend on the data)."""
    d, d_plus, domains = cell_neighbours(tmp_path)
    params = [x for k, v in CELL_SETTINGS.get(mechanism_id, {}).items() for x in ("--param", f"{k}={v}")]
    outputs = []
    for data, name in ((d, "a"), (d_plus, "b")):
        assert cli.main(["release", str(data), "--format", "records", "--header", "--attributes", "sex,region", "--mechanism",
                         mechanism_id, "--epsilon", "1", *params, "--domains", str(domains), "--dataset", name,
                         "--report", "html", "--out", str(tmp_path / name)]) == 0
        outputs.append(published(tmp_path / name))
    for key in ("public_facts", "domain", "parameters", "budget", "expected_error"):
        assert outputs[0][key] == outputs[1][key], key
    assert outputs[0]["domain"]["cells"] == 8
    for name in ("a", "b"):
        assert "atlantis" not in (tmp_path / name / "release.csv").read_text()
        assert "atlantis" not in (tmp_path / name / "release.json").read_text()


def test_cell_domains_bad_files(tmp_path, dpdesk_home, capsys):
    d, _, _ = cell_neighbours(tmp_path)
    cases = {"not json": "not valid JSON", "[1, 2]": "JSON object", '{"sex": []}': "non-empty list",
             '{"sex": ["F", "F"], "region": ["north"]}': "twice", '{"sex": "range:x"}': "whole number",
             '{"sex": ["F", "M"]}': "every attribute"}
    for k, (content, message) in enumerate(cases.items()):
        path = tmp_path / f"bad{k}.json"
        path.write_text(content)
        assert cli.main(["release", str(d), "--format", "records", "--header", "--attributes", "sex,region", "--mechanism",
                         "geometric", "--epsilon", "1", "--domains", str(path), "--out", str(tmp_path / "o")]) == 2
        assert message in capsys.readouterr().err, content
    assert not (tmp_path / "o").exists() and Ledger.open().totals() == {}


# -- private discovery ---------------------------------------------------------------------------------
def test_discovery_threshold_bounds_the_chance_of_listing_a_one_person_item():
    """A label held by one person is listed with probability at most δ/k per label (module notes)."""
    for epsilon, delta, bound in ((1.0, 0.05, 1), (0.5, 1e-6, 20), (2.0, 1e-9, 3)):
        tau, achieved = discovery_threshold(epsilon, delta, bound)
        q = np.exp(-epsilon / bound)
        assert achieved <= delta and bound * q ** (tau - 1) / (1 + q) == pytest.approx(achieved)
        assert bound * q ** (tau - 2) / (1 + q) > delta or tau == 2  # the smallest such threshold
    # measured: one-person labels among 2,000 candidates, 200 runs, δ = 0.05 with k = 1
    tau, achieved = discovery_threshold(1.0, 0.05, 1)
    data = dpdesk.from_matrix(sp.identity(2000, format="csv" if False else "csr", dtype=np.int64))
    listed = 0
    for seed in range(200):
        domain = discover_items(data, 1.0, 0.05, 1, SeededRandom(np.random.default_rng(seed)))
        listed += domain.size
    rate = listed / (200 * 2000)
    assert rate == pytest.approx(achieved, rel=0.15)  # a halved threshold would list far more


def test_discovery_spends_its_share_and_delta_in_the_report_and_the_ledger(tmp_path, dpdesk_home, data_dir):
    assert cli.main(["release", str(data_dir / "retail.dat.gz"), "--mechanism", "lpa", "--epsilon", "1",
                     "--bound", "10", "--items", "discover", "--delta", "1e-6", "--discover-share", "0.3",
                     "--out", str(tmp_path / "out")]) == 0
    metadata = json.loads((tmp_path / "out" / "release.json").read_text())
    steps = metadata["budget"]
    assert steps[0]["step"].startswith("discover") and steps[0]["epsilon"] == pytest.approx(0.3)
    assert 0 < steps[0]["delta"] <= 1e-6 and sum(s["epsilon"] for s in steps) == pytest.approx(1.0)
    assert metadata["domain"]["how"] == "discovered" and metadata["epsilon"] == 1.0
    truth = dpdesk.load(data_dir / "retail.dat.gz")
    listed = pd.read_csv(tmp_path / "out" / "release.csv", dtype=str)["item"]
    counts = dict(zip(truth.item_labels, truth.column_counts))
    assert len(listed) > 10 and min(counts[item] for item in listed) > 50  # only common items pass
    entry = Ledger.open().entries()[-1]
    assert entry.epsilon == 1.0 and entry.delta == steps[0]["delta"]


def test_a_discovery_that_finds_nothing_is_charged_and_says_so(tmp_path, dpdesk_home, capsys):
    tiny = dpdesk.from_matrix(sp.identity(5, format="csr", dtype=np.int64), name="tiny")
    csv = _pairs_csv(tmp_path / "tiny.csv", tiny)
    assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.5", "--bound", "1",
                     "--items", "discover", "--delta", "1e-6", "--discover-share", "0.1",
                     "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "No item passed" in err and "recorded in the budget ledger" in err
    entry = Ledger.open().entries()[-1]
    assert entry.kind == "charged" and entry.epsilon == pytest.approx(0.05) and entry.delta > 0
    assert not (tmp_path / "out").exists()


def test_the_discover_bound_is_needed_before_reading(tmp_path, dpdesk_home, capsys):
    d, _ = neighbours()
    csv = _pairs_csv(tmp_path / "d.csv", d)
    assert cli.main(["release", str(csv), "--mechanism", "dpsense", "--epsilon", "1", "--items", "discover",
                     "--delta", "1e-6", "--out", str(tmp_path / "o")]) == 2
    assert "--discover-bound" in capsys.readouterr().err


def test_the_api_refuses_a_secure_release_without_a_domain():
    d, _ = neighbours()
    with pytest.raises(ParameterError, match="item labels found in the data"):
        dpdesk.release(d, "lpa", epsilon=1, bound=3)
    dpdesk.release(d, "lpa", epsilon=1, bound=3, rng=1)  # exploration may use the data's labels
