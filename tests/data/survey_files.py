"""One small survey table written as every kind of file dpdesk reads besides text: an Excel
workbook (openpyxl), SPSS .sav, Stata .dta and SAS transport .xpt (pyreadstat's writers), an Arrow IPC
(Feather) file (pandas' to_feather), and a SAS7BDAT file (``survey.sas7bdat``, made once by ReadStat's own writer: ``make_survey_sas7bdat.sh``).

The table has value labels (SPSS, Stata), missing values of each kind and non-ASCII text:

    row  person   item  sex            region     bought
    1    Zoë      1     1 Female       Zürich     1
    2    Zoë      2     1 Female       Zürich     1
    3    Łukasz   1     2 Male         Łódź       0
    4    Åsa      3     9 Refused (*)  (empty)    1
    5    Åsa      1     (missing)      Göteborg   0

(*) an SPSS user-defined missing value; in Stata and SAS 9 is an ordinary code. Items are
labelled 1 café, 2 thé, 3 jus d'orange (SPSS, Stata; the workbook holds the words themselves).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
KINDS = ("xlsx", "sav", "dta", "xpt", "sas7bdat", "arrow")
ITEM_LABELS = {1: "café", 2: "thé", 3: "jus d'orange"}
SEX_LABELS = {1: "Female", 2: "Male", 9: "Refused"}
PEOPLE = ["Zoë", "Zoë", "Łukasz", "Åsa", "Åsa"]
ITEMS = [1, 2, 1, 3, 1]
SEX = [1.0, 1.0, 2.0, 9.0, np.nan]
REGIONS = ["Zürich", "Zürich", "Łódź", "", "Göteborg"]
BOUGHT = [1.0, 1.0, 0.0, 1.0, 0.0]
#: which kinds carry value labels (SAS keeps them in a separate catalog; a workbook holds words)
LABELLED = {"sav", "dta"}


def frame() -> pd.DataFrame:
    return pd.DataFrame({"person": PEOPLE, "item": np.array(ITEMS, dtype=float), "sex": SEX, "region": REGIONS,
                         "bought": BOUGHT})


def expected_items(kind: str) -> list[str]:
    """The item labels dpdesk should read from the item column."""
    if kind in LABELLED or kind == "xlsx":
        return sorted(set(ITEM_LABELS.values()))
    return ["1", "2", "3"]


def write(folder: Path, kind: str, name: str = "survey") -> Path:
    path = Path(folder) / f"{name}.{kind}"
    data = frame()
    if kind == "xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        notes = book.active
        notes.title = "Read me"  # an empty first sheet: the reader takes the first sheet with data
        sheet = book.create_sheet("Données")
        sheet.append(list(data.columns))
        for person, item, sex, region, bought in zip(PEOPLE, ITEMS, SEX, REGIONS, BOUGHT):
            sheet.append([person, ITEM_LABELS[item], None if sex != sex else SEX_LABELS[int(sex)],
                          region or None, bool(bought)])
        book.save(path)
    elif kind == "sav":
        import pyreadstat

        pyreadstat.write_sav(data, path, variable_value_labels={"item": ITEM_LABELS, "sex": SEX_LABELS},
                             missing_ranges={"sex": [9.0]})
    elif kind == "dta":
        import pyreadstat

        pyreadstat.write_dta(data, path, variable_value_labels={"item": ITEM_LABELS, "sex": SEX_LABELS})
    elif kind == "xpt":
        import pyreadstat

        pyreadstat.write_xport(data, path, table_name="SURVEY")
    elif kind == "sas7bdat":
        shutil.copyfile(HERE / "survey.sas7bdat", path)
    elif kind == "arrow":  # Arrow IPC (Feather version 2), as pandas writes it
        data.to_feather(path)
    else:
        raise ValueError(kind)
    return path


def write_matrix(folder: Path, kind: str) -> Path:
    """A 0/1 matrix (person, then one column per item) as ``kind`` (not SAS7BDAT: no writer here).

    In the workbook one column holds TRUE/FALSE, as Excel users often store yes/no.
    """
    path = Path(folder) / f"matrix.{kind}"
    data = pd.DataFrame({"person": ["Zoë", "Łukasz", "Åsa"], "cafe": [1.0, 0.0, 1.0], "the": [0.0, 1.0, 1.0]})
    if kind == "xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        sheet = book.active
        sheet.append(["person", "cafe", "the"])
        for person, cafe, the in data.itertuples(index=False):
            sheet.append([person, int(cafe), bool(the)])
        book.save(path)
    elif kind == "arrow":
        data.to_feather(path)
    else:
        import pyreadstat

        {"sav": pyreadstat.write_sav, "dta": pyreadstat.write_dta, "xpt": pyreadstat.write_xport}[kind](data, path)
    return path
