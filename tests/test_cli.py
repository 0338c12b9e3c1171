"""The command line on real data: mechanisms, release, compare, and clear errors (exit 2)."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

import dpdesk


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "dpdesk.cli", *map(str, args)], capture_output=True, text=True,
                          env=env)


def test_version_and_mechanisms():
    assert run("--version").stdout.strip() == f"dpdesk {dpdesk.__version__}"
    listed = json.loads(run("mechanisms", "--json").stdout)
    ids = [m["id"] for m in listed]
    assert {"lpa", "alpa", "diff"} <= set(ids)
    lpa = next(m for m in listed if m["id"] == "lpa")
    assert {p["name"] for p in lpa["parameters"]} >= {"bound", "noise"}
    human = run("mechanisms").stdout
    assert "lpa" in human and "parameters:" in human


def test_release_round_trip(tmp_path, data_dir, dpdesk_home):
    out = tmp_path / "release"
    result = run("release", data_dir / "chess.dat.gz", "--mechanism", "lpa", "--epsilon", "0.69", "--bound", "37",
                 "--items", "from-data", "--items-are-public", "--out", out)
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "release.csv", dtype={"item": str})
    assert list(table.columns) == ["item", "noisy_count", "margin95"] and len(table) == 75
    truth = dpdesk.load(data_dir / "chess.dat.gz").column_counts
    errors = (table["noisy_count"].to_numpy() - truth)
    assert 0 < abs(errors).mean() < 5 * 37 / 0.69  # noisy, at the expected scale
    metadata = json.loads((out / "release.json").read_text())
    for key in ("mechanism", "epsilon", "budget", "parameters", "software", "randomness", "created"):
        assert key in metadata, key
    assert metadata["mechanism"]["id"] == "lpa" and metadata["epsilon"] == 0.69
    assert metadata["parameters"]["bound"] == 37
    assert metadata["mode"] == "release" and "os.urandom" in metadata["randomness"]
    assert sum(step["epsilon"] for step in metadata["budget"]) == pytest.approx(0.69)
    # a second release into the same folder is refused, nothing overwritten
    before = (out / "release.csv").read_bytes()
    again = run("release", data_dir / "chess.dat.gz", "--mechanism", "lpa", "--epsilon", "0.69", "--bound", "37",
                "--items", "from-data", "--items-are-public", "--out", out)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert (out / "release.csv").read_bytes() == before


def test_compare_writes_results_and_summary(tmp_path, data_dir):
    out = tmp_path / "cmp"
    result = run("compare", data_dir / "chess.dat.gz", "--mechanisms", "lpa,alpa", "--epsilon", "0.1,0.69,1.1",
                 "--repeats", "4", "--seed", "5", "--bound", "37", "--out", out, "--quiet")
    assert result.returncode == 0, result.stderr
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 2 * 3 * 4
    assert {"mechanism", "epsilon", "repeat", "mae", "mre", "topk_mae", "topk_mre", "topk_accuracy"} <= set(results.columns)
    summary = pd.read_csv(out / "summary.csv")
    assert {"mean", "ci_low", "ci_high"} <= set(summary.columns)


@pytest.mark.parametrize("args,message", [
    (["--mechanism", "lpa", "--epsilon", "0", "--bound", "5"], "ε must be a finite number greater than 0"),
    (["--mechanism", "lpa", "--epsilon", "-1", "--bound", "5"], "ε must be a finite number greater than 0"),
    (["--mechanism", "nope", "--epsilon", "1"], "Unknown mechanism 'nope'"),
    (["--mechanism", "lpa", "--epsilon", "1", "--bound", "0"], "at least 1"),
    (["--mechanism", "lpa", "--epsilon", "1"], "bound"),
    (["--mechanism", "diff", "--epsilon", "1"], "index"),
    (["--mechanism", "lpa", "--epsilon", "1", "--bound", "5", "--param", "noise=loud"], "must be one of"),
    (["--mechanism", "lpa", "--epsilon", "1", "--bound", "5"], "Declare the list of items"),
    (["--mechanism", "lpa", "--epsilon", "1", "--bound", "5", "--items", "from-data"], "--items-are-public"),
    (["--mechanism", "lpa", "--epsilon", "1", "--bound", "5", "--items", "discover"], "--delta"),
    (["--mechanism", "lpa", "--epsilon", "1", "--bound", "5", "--items", "discover", "--delta", "1.5"],
     "between 0 and 1"),
    (["--mechanism", "lpa", "--epsilon", "1", "--bound", "5", "--items", "range:0"], "between 1"),
    (["--mechanism", "fpa", "--epsilon", "1", "--bound", "5", "--param", "rho=9", "--items", "range:10"],
     "too large for 10 items"),
    # issue 29: a bound given to DPSense-S is refused with the reason, not silently ignored
    (["--mechanism", "dpsense-s", "--epsilon", "1", "--bound", "5", "--items", "range:10"],
     "'dpsense-s' needs no bound Δ and does not use one"),
])
def test_bad_parameters_exit_2(tmp_path, data_dir, args, message):
    result = run("release", data_dir / "chess.dat.gz", *args, "--out", tmp_path / "o")
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o").exists()  # nothing written


def test_compare_says_which_mechanisms_do_not_use_the_bound(tmp_path, data_dir):
    """Issue 29: dpsense-s gave the same results for every --bound without a word; compare now says so."""
    result = run("compare", data_dir / "chess.dat.gz", "--mechanisms", "lpa,dpsense-s", "--epsilon", "1",
                 "--repeats", "1", "--seed", "1", "--bound", "9", "--out", tmp_path / "c", "--quiet")
    assert result.returncode == 0, result.stderr
    assert "dpsense-s needs no bound Δ and does not use --bound 9" in result.stderr
    assert "lpa needs no bound" not in result.stderr


def test_compare_bad_mechanism(tmp_path, data_dir):
    result = run("compare", data_dir / "chess.dat.gz", "--mechanisms", "lpa,zzz", "--epsilon", "1", "--out",
                 tmp_path / "c", "--bound", "3")
    assert result.returncode == 2 and "Unknown mechanism 'zzz'" in result.stderr


def test_gui_without_display_points_to_the_cli():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    result = run("gui", "--sample", env=env)
    assert result.returncode == 1
    # run here as `python -m dpdesk.cli`: the commands shown are that program's, so they run as copied
    assert "no display" in result.stderr and "-m dpdesk.cli inspect" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args, says", [
    (["--epsilon", "1,5", "--bound", "5"], "--epsilon must be a number such as 0.5 (with a dot, not a comma), not '1,5'"),
    (["--epsilon", "1", "--bound", "2.5"], "--bound must be a whole number such as 20, not '2.5'"),
    (["--epsilon", "1", "--bound", "5", "--header", "--no-header"], "not allowed with argument --header"),
])
def test_a_mistyped_option_is_one_line_in_words(args, says, data_dir, tmp_path):
    result = run("release", data_dir / "chess.dat.gz", "--mechanism", "lpa", *args, "--out", tmp_path / "o")
    assert result.returncode == 2 and says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "usage:" not in result.stderr


def test_ledger_without_a_subcommand_names_the_choices():
    result = run("ledger")
    assert result.returncode == 2 and "{list,verify,cap,new}" in result.stderr and "ledger_command" not in result.stderr


def test_a_declared_list_that_matches_nothing_is_noted_to_the_steward(tmp_path):
    """Every count is then noise alone; said on stderr after the release (a refusal would be a
    decision on the data that no budget pays for), never in a public file."""
    home = {**os.environ, "DPDESK_HOME": str(tmp_path / "home")}
    sample = run("sample", tmp_path, env=home)
    assert sample.returncode == 0
    data = tmp_path / "groceries.csv.gz"
    wrong = run("release", data, "--mechanism", "lpa", "--bound", "5", "--epsilon", "0.5", "--items", "range:169",
                "--out", tmp_path / "a", env=home)
    assert wrong.returncode == 0 and "none of the 169 declared items occurs in the data" in wrong.stderr
    assert "declared items" not in (tmp_path / "a" / "release.json").read_text()
    right = run("release", data, "--mechanism", "lpa", "--bound", "5", "--epsilon", "0.5", "--items", "from-data",
                "--items-are-public", "--out", tmp_path / "b", env=home)
    assert right.returncode == 0 and "note" not in right.stderr


def test_inspect_names_the_columns_it_took_as_person_and_item(tmp_path):
    """A table that is not what the steward thinks (price, name, time) is read by position: say so."""
    table = tmp_path / "table.csv"
    table.write_text("price,name,when\n1.5,x,1\n2.5,y,2\n3.0,z,3\n")
    for engine in ("memory", "duckdb"):
        result = run("inspect", table, "--engine", engine)
        assert result.returncode == 0 and "person = column 'price', item = column 'name'" in result.stdout


def test_a_dry_run_previews_the_margins_and_spends_nothing(tmp_path, data_dir, dpdesk_home):
    """issue 28: the margin each value will get, shown before anything is read, drawn, spent or written."""
    from dpdesk.privacy.ledger import Ledger

    out = tmp_path / "release"
    common = ["release", data_dir / "groceries.csv.gz", "--mechanism", "gs", "--epsilon", "0.69", "--bound", "5",
              "--items", "from-data", "--items-are-public", "--out", out, "--dry-run", "--people", "9835"]
    text = run(*common, "--typical-row-length", "4.4")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("Dry run: the release of groceries with gs would spend ε = 0.69; nothing was read")
    assert "Preview on a stand-in of 9,835 people with about 4.4 of 169 items each" in text.stdout
    assert "A preview, not the release" in text.stdout
    as_json = json.loads(run(*common, "--json").stdout)
    assert as_json["dry_run"] is True and as_json["epsilon"] == 0.69 and as_json["dataset_epsilon_spent"] == 0
    preview = as_json["margin_preview"]
    assert preview["preview"] is True and preview["stand_in"]["items"] == 169 and preview["margin95"]["median"] > 0
    assert not out.exists() and Ledger.open().status("groceries").spent == 0
    withheld = json.loads(run("release", data_dir / "groceries.csv.gz", "--mechanism", "alpa", "--epsilon", "0.69",
                              "--items", "range:169", "--out", out, "--dry-run", "--json").stdout)
    assert withheld["margin_preview"]["withheld"] and "would publish no margin" in withheld["margin_preview"]["text"]
    refused = run("release", data_dir / "groceries.csv.gz", "--mechanism", "gs", "--epsilon", "0.69",
                  "--items", "range:169", "--out", out, "--dry-run")  # no bound: refused as a release would be
    assert refused.returncode == 2 and "bound" in refused.stderr
    unknown = json.loads(run("release", data_dir / "groceries.csv.gz", "--mechanism", "lpa", "--epsilon", "0.69",
                             "--bound", "5", "--items", "discover", "--delta", "1e-6", "--dry-run", "--json").stdout)
    assert unknown["margin_preview"]["preview"] is False  # discovered items: what a stand-in would need is said
