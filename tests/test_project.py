"""Project files are checked against a schema: every malformed project is one clear
ParameterError naming the field (never a traceback), and `"epsilon": true` never releases."""

import json
import os
import subprocess
import sys

import pytest

from dpdesk import cli
from dpdesk.errors import ParameterError
from dpdesk.privacy.ledger import Ledger
from dpdesk.project import Project

PUBLIC_ITEMS = {"kind": "public-data"}


def good(data_path) -> dict:
    return {
        "dpdesk_project": 1,
        "data": {"path": str(data_path), "format": "transactions", "options": {"delimiter": "whitespace"}},
        "mechanisms": [{"mechanism": "lpa", "params": {"noise": "geometric"}, "enabled": True}],
        "compare": {"epsilons": [0.5, 1.0], "repeats": 3, "seed": 1, "epsilon": 1.0, "bound": 5},
        "release": {"mechanism": "lpa", "epsilon": 0.5, "params": {"bound": 5}, "chosen_how": "declared in advance",
                    "dataset": "chess", "items": PUBLIC_ITEMS},
    }


def changed(data_path, where: str, value):
    """The good project with one field (a dotted path; ``None`` removes it) set to ``value``."""
    content = good(data_path)
    *parents, last = where.split(".")
    target = content
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is REMOVE:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return content


REMOVE = object()
DEEP = "[" * 100_000 + "]" * 100_000

# (field changed, new value, words the message must hold)
MALFORMED = [
    ("release.epsilon", True, "release.epsilon"),
    ("release.epsilon", "0.5", "release.epsilon"),
    ("release.epsilon", -1, "release.epsilon"),
    ("release.epsilon", 0, "release.epsilon"),
    ("release.epsilon", 10**400, "release.epsilon"),
    ("release.epsilon", [0.5], "release.epsilon"),
    ("release.epsilon", {"value": 1}, "release.epsilon"),
    ("release.mechanism", 7, "release.mechanism"),
    ("release.mechanism", "", "release.mechanism"),
    ("release.params", [1, 2], "release.params"),
    ("release.params", {"bound": [1, [2]]}, "release.params.bound"),
    ("release.params", {"bound": {"deep": {"er": 1}}}, "release.params.bound"),
    ("release.items", {"kind": "range", "size": "ten"}, "release.items.size"),
    ("release.items", {"kind": "list", "path": 5}, "release.items.path"),
    ("release.items", {"kind": "everything"}, "release.items.kind"),
    ("release.items", {"size": 3}, "kind"),
    ("release.items", "public", "release.items"),
    ("release.chosen_how", 3, "release.chosen_how"),
    ("release.surprise", 1, "surprise"),
    ("data", [], "data"),
    ("data.path", 12, "data.path"),
    ("data.path", "a\x00b", "data.path"),
    ("data.format", "excel", "data.format"),
    ("data.options", "fast", "data.options"),
    ("data.options", {"header": "yes"}, "data.options.header"),
    ("data.options", {"attributes": "sex,age"}, "data.options.attributes"),
    ("data.options", {"domains": {"sex": {"F": 1}}}, "data.options.domains.sex"),
    ("data.options", {"person": -1}, "data.options.person"),
    ("data.options", {"turbo": True}, "turbo"),
    ("mechanisms", {"lpa": {}}, "mechanisms"),
    ("mechanisms.0", "lpa", "mechanisms[0]"),
    ("mechanisms.0.enabled", "yes", "mechanisms[0].enabled"),
    ("compare.repeats", 0, "compare.repeats"),
    ("compare.epsilons", [1, "two"], "compare.epsilons[1]"),
    ("compare.seed", 1.5, "compare.seed"),
    ("dpdesk_project", True, "dpdesk_project"),
    ("dpdesk_project", 2, "dpdesk_project"),
]


@pytest.fixture
def chess(data_dir):
    return data_dir / "chess.dat.gz"


def write(path, content):
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


@pytest.mark.parametrize("where,value,words", MALFORMED, ids=[f"{w}={str(v)[:12]}" for w, v, _ in MALFORMED])
def test_each_malformed_field_is_named(tmp_path, chess, where, value, words):
    path = write(tmp_path / "p.dpdesk", changed(chess, where, value))
    with pytest.raises(ParameterError) as caught:
        Project.load(path)
    message = str(caught.value)
    assert "p.dpdesk" in message and words in message and "\n" not in message, message


@pytest.mark.parametrize("text,words", [
    (DEEP, "nested far too deeply"),
    ('{"dpdesk_project": 1, "release": {"epsilon": NaN}}', "NaN"),
    ('{"dpdesk_project": 1, "release": {"epsilon": Infinity}}', "Infinity"),
    ("[1, 2, 3]", "not a dpdesk project"),
    ('"dpdesk"', "not a dpdesk project"),
    ("null", "not a dpdesk project"),
    ("{", "cannot be read"),
    ("", "cannot be read"),
    ('{"dpdesk_project": 1, "data": ' + "{\"options\": " * 500 + "1" + "}" * 501, "data.options has an unknown"),
])
def test_json_that_is_no_project_at_all(tmp_path, text, words):
    path = write(tmp_path / "x.dpdesk", text)
    with pytest.raises(ParameterError, match=words):
        Project.load(path)


def test_bytes_and_places_that_are_no_project(tmp_path):
    latin = tmp_path / "l.dpdesk"
    latin.write_bytes(b'{"dpdesk_project": 1, "release": {"dataset": "caf\xe9"}}')
    with pytest.raises(ParameterError, match="cannot be read"):
        Project.load(latin)
    with pytest.raises(ParameterError, match="does not exist"):
        Project.load(tmp_path / "missing.dpdesk")
    with pytest.raises(ParameterError, match="folder"):
        Project.load(tmp_path)
    fifo = tmp_path / "pipe.dpdesk"
    os.mkfifo(fifo)
    with pytest.raises(ParameterError, match="named pipe"):
        Project.load(fifo)
    huge = tmp_path / "huge.dpdesk"
    huge.write_text('{"dpdesk_project": 1, "release": {"dataset": "' + "x" * (5 << 20) + '"}}')
    with pytest.raises(ParameterError, match="only settings"):
        Project.load(huge)


def test_the_good_project_loads_and_saves_round_trip(tmp_path, chess):
    path = write(tmp_path / "p.dpdesk", good(chess))
    project = Project.load(path)
    assert project.release_choice()["epsilon"] == 0.5
    assert project.load_data().n_rows == 3196
    again = Project.load(project.save(tmp_path / "q.dpdesk"))
    assert again.release == project.release and again.data["path"] == project.data["path"]


def test_epsilon_true_never_releases(tmp_path, chess, dpdesk_home):
    path = write(tmp_path / "p.dpdesk", changed(chess, "release.epsilon", True))
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "dpdesk.cli", "release", "--project", str(path), "--out", str(out)],
                            capture_output=True, text=True, env={**os.environ, "DPDESK_HOME": str(dpdesk_home)})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().startswith("dpdesk: error:") and "release.epsilon" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists() and Ledger.open().totals() == {}


def test_every_malformed_project_fails_in_the_cli_before_anything_is_spent(tmp_path, chess, dpdesk_home, capsys):
    for k, (where, value, _) in enumerate(MALFORMED):
        path = write(tmp_path / f"p{k}.dpdesk", changed(chess, where, value))
        assert cli.main(["release", "--project", str(path), "--out", str(tmp_path / "out")]) == 2, where
        error = capsys.readouterr().err
        assert error.startswith("dpdesk: error:") and len(error.strip().splitlines()) == 1, error
    assert not (tmp_path / "out").exists() and Ledger.open().totals() == {}
    # the good one releases
    path = write(tmp_path / "good.dpdesk", good(chess))
    assert cli.main(["release", "--project", str(path), "--out", str(tmp_path / "out")]) == 0
    assert Ledger.open().totals()["chess"].spent == pytest.approx(0.5)
