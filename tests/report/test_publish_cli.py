"""`dpdesk release` and `dpdesk export --entry` say what they did: the file paths (one a line, as
scripts read them), then mechanism, ε (and δ), the dataset's total and cap from the ledger, the entry
and the files; `--json` gives the same as one object. `--raw` publishes the mechanism's own values."""

import json

import pandas as pd

from dpdesk import cli
from dpdesk.privacy.ledger import Ledger
from tests.privacy.test_ledger import small_data


def pairs_csv(tmp_path):
    source = small_data("shop", seed=5, rows=40, items=30, prefix="p")
    rows, cols = source.matrix.nonzero()
    path = tmp_path / "shop.csv"
    path.write_text("person,item\n" + "".join(f"u{r},{source.item_labels[c]}\n" for r, c in zip(rows, cols)))
    return path


def release_args(tmp_path, out, *extra):
    return ["release", str(pairs_csv(tmp_path)), "--mechanism", "gs-r", "--epsilon", "0.4", "--bound", "3",
            "--items", "from-data", "--items-are-public", "--out", str(out), *extra]


def test_the_release_prints_its_files_then_what_it_did(tmp_path, dpdesk_home, capsys):
    Ledger.open().set_cap("shop", 2.0, "policy for the shop survey")
    assert cli.main(release_args(tmp_path, tmp_path / "first")) == 0
    assert cli.main(release_args(tmp_path, tmp_path / "second")) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-6:-1] == [str(tmp_path / "first" / "release.csv"), str(tmp_path / "first" / "release.json"),
                            "Released shop with gs-r at ε = 0.4 (whole numbers ≥ 0, with 95% margins): ledger entry "
                            "#3; shop has spent ε = 0.4 of its cap 2 (1.6 left); 2 files in "
                            f"{tmp_path / 'first'}.",
                            str(tmp_path / "second" / "release.csv"), str(tmp_path / "second" / "release.json")]
    assert lines[-1].startswith("Released shop with gs-r at ε = 0.4") and "ledger entry #4" in lines[-1]
    assert "shop has spent ε = 0.8 of its cap 2 (1.2 left)" in lines[-1]


def test_json_gives_the_same_as_one_object(tmp_path, dpdesk_home, capsys):
    out = tmp_path / "out"
    assert cli.main(release_args(tmp_path, out, "--json", "--raw")) == 0
    summary = json.loads(capsys.readouterr().out)
    entry = Ledger.open().entries(kinds=("release",))[-1]
    assert summary == {
        "mechanism": "gs-r", "dataset": "shop", "epsilon": 0.4, "delta": 0.0,
        "spent_now": {"epsilon": 0.4, "delta": 0.0}, "entry": entry.id, "published": "raw values",
        "dataset_epsilon_spent": 0.4, "dataset_delta_spent": 0.0, "cap": 3.0, "cap_remaining": 2.6,
        "files": [str(out / "release.csv"), str(out / "release.json")]}
    table = pd.read_csv(out / "release.csv")
    assert (table["noisy_count"] != table["noisy_count"].round()).any()  # raw: group averages as they are


def test_export_again_says_no_budget_was_spent(tmp_path, dpdesk_home, capsys):
    assert cli.main(release_args(tmp_path, tmp_path / "first")) == 0
    entry = Ledger.open().entries(kinds=("release",))[-1]
    capsys.readouterr()
    assert cli.main(["export", "--entry", str(entry.id), "--out", str(tmp_path / "raw"), "--raw", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["spent_now"] == {"epsilon": 0.0, "delta": 0.0} and summary["published"] == "raw values"
    assert summary["entry"] == entry.id and summary["dataset_epsilon_spent"] == 0.4
    assert cli.main(["export", "--entry", str(entry.id), "--out", str(tmp_path / "again")]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"Wrote ledger entry #{entry.id} (gs-r) again, without new noise or budget")
    assert (tmp_path / "again" / "release.csv").read_bytes() == (tmp_path / "first" / "release.csv").read_bytes()
    assert cli.main(["ledger", "verify", "--release", str(tmp_path / "raw"), str(tmp_path / "again")]) == 0


def test_a_project_file_that_records_comparisons_is_observed(tmp_path, dpdesk_home, capsys):
    from dpdesk.data.domain import DomainDeclaration
    from dpdesk.project import Project
    from dpdesk.workflow import CHOSEN_ON_TRUE_DATA, comparison_run, observed_choice

    runs = [comparison_run(["lpa", "gs-r"], [0.4, 1.0], on_true_data=True)]
    project = Project(data={"path": str(pairs_csv(tmp_path)), "format": "pairs", "options": {}},
                      compare={"runs": runs},
                      release={"mechanism": "gs-r", "epsilon": 0.4, "params": {"bound": 3}, "dataset": "shop",
                               "chosen_how": CHOSEN_ON_TRUE_DATA, "raw": True,
                               "items": DomainDeclaration("public-data").to_json()})
    path = project.save(tmp_path / "shop.dpdesk")
    assert cli.main(["release", "--project", str(path), "--out", str(tmp_path / "out"), "--report", "html",
                     "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["published"] == "raw values"  # as the project chose
    metadata = json.loads((tmp_path / "out" / "release.json").read_text(encoding="utf-8"))
    assert metadata["choice"] == {"stated": CHOSEN_ON_TRUE_DATA, "observed": observed_choice(runs)}
    assert "on the true data: gs-r, lpa at ε = 0.4, 1" in (tmp_path / "out" / "privacy-report.html").read_text()
