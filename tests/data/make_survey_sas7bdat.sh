#!/usr/bin/env bash
# Make tests/data/survey.sas7bdat: the survey table of survey_files.py, written as SPSS by
# pyreadstat, then converted to SAS7BDAT by ReadStat's own writer (pyreadstat cannot write
# SAS7BDAT; the `readstat` command of the ReadStat library can: Debian's package `readstat`).
#   bash tests/data/make_survey_sas7bdat.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/../.."
python="${1:-.venv/bin/python}"
command -v readstat >/dev/null || { echo "needs the readstat command (apt-get install readstat)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# without value labels and user-missing values: SAS7BDAT keeps neither (labels live in a catalog)
"$python" - "$work/survey.sav" <<'PY'
import sys
import pyreadstat
sys.path.insert(0, "tests/data")
from survey_files import frame
pyreadstat.write_sav(frame(), sys.argv[1])
PY
readstat "$work/survey.sav" "$work/survey.sas7bdat"
cp "$work/survey.sas7bdat" tests/data/survey.sas7bdat
echo "wrote tests/data/survey.sas7bdat ($(stat -c %s tests/data/survey.sas7bdat) bytes)"
