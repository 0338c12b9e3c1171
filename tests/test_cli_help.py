"""The command line explains itself: every command and option has a help line, and
`dpdesk inspect --json` gives the fingerprint the budget ledger files releases under."""

import argparse
import json
import subprocess
import sys

import pytest

import dpdesk
from dpdesk.cli import build_parser


def walk(parser: argparse.ArgumentParser, path: str = "dpdesk"):
    """(command path, action) for every option and argument of every (sub)command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helped = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", ("command", helped.get(name))
                yield from walk(sub, f"{path} {name}")
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, (action.option_strings[0] if action.option_strings else action.dest, action.help)


def missing_help(parser) -> list[str]:
    return [f"{path}: {name}" for path, (name, text) in walk(parser)
            if not text or text == argparse.SUPPRESS or not text.strip()]


def test_every_command_and_option_has_a_help_line():
    parser = build_parser()
    seen = list(walk(parser))
    assert len(seen) > 60 and any(path == "dpdesk compare" and name == "--repeats" for path, (name, _) in seen)
    assert missing_help(parser) == []


def test_the_walk_finds_an_option_without_help():
    parser = build_parser()
    compare = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["compare"]
    compare.add_argument("--planted")
    assert missing_help(parser) == ["dpdesk compare: --planted"]


@pytest.mark.parametrize("command", ["inspect", "release", "compare", "plan", "ledger"])
def test_the_help_text_prints(command):
    result = subprocess.run([sys.executable, "-m", "dpdesk.cli", command, "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "usage: dpdesk" in result.stdout and "Traceback" not in result.stderr


def test_inspect_json_includes_the_fingerprint(data_dir):
    path = data_dir / "chess.dat.gz"
    result = subprocess.run([sys.executable, "-m", "dpdesk.cli", "inspect", str(path), "--json"], capture_output=True,
                            text=True, check=True)
    figures = json.loads(result.stdout)
    assert figures["fingerprint"] == dpdesk.load(path).fingerprint and len(figures["fingerprint"]) == 64
    assert figures["rows"] == 3196
