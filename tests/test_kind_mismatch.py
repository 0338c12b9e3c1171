"""A mechanism given the other shape of data says what works, in one sentence, and the way out it names
works (issue 29: the sparse summaries and baskets sent the steward in a circle between --items and
--domains). Nothing is read, drawn or spent by a refusal."""

import pytest

from dpdesk import cli
from dpdesk.privacy.ledger import Ledger

RECORDS = "sex,region\nF,north\nM,south\nF,south\nM,north\nF,north\n"


@pytest.mark.parametrize("declaration", [["--items", "from-data", "--items-are-public"],
                                         ["--domains", "from-data", "--domains-are-public"]])
def test_a_sparse_summary_of_a_basket_file_names_the_item_mechanisms(declaration, tmp_path, dpdesk_home, data_dir,
                                                                    capsys):
    basket = str(data_dir / "retail.dat.gz")
    assert cli.main(["release", basket, "--mechanism", "filter", "--param", "threshold=3", "--epsilon", "1",
                     *declaration, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lpa or gs and --items" in err and "one person holds several items" in err
    assert "declare its items with --items" not in err and not (tmp_path / "o").exists()
    assert Ledger.open().totals() == {}
    # the way out it names works
    assert cli.main(["release", basket, "--mechanism", "lpa", "--bound", "20", "--epsilon", "1", "--items",
                     "from-data", "--items-are-public", "--out", str(tmp_path / "o")]) == 0


def test_an_item_mechanism_with_domains_names_the_item_declaration_and_the_summaries(tmp_path, dpdesk_home, capsys):
    table = tmp_path / "people.csv"
    table.write_text(RECORDS)
    common = ["release", str(table), "--format", "records", "--header", "--attributes", "sex,region",
              "--epsilon", "1", "--out", str(tmp_path / "o")]
    assert cli.main([*common, "--mechanism", "lpa", "--bound", "2", "--domains", "from-data",
                     "--domains-are-public"]) == 2
    err = capsys.readouterr().err
    assert "declared with --items" in err and "filter, threshold, priority" in err and "--domains" in err
    # the way out: a summary of the table, with its domains declared
    assert cli.main([*common, "--mechanism", "geometric", "--domains", "from-data", "--domains-are-public"]) == 0
