"""Every reference in the code to the design documents points into the repository:
`docs/ARCHITECTURE.md §n` to a section that exists, `docs/QT-NOTES.md`, never a file outside it."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("dpdesk", "tests", "benchmarks", "scripts", "packaging")


def source_files():
    for folder in SOURCES:
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".sh", ".spec") and "__pycache__" not in path.parts:
                yield path
    yield REPO / "pyproject.toml"


def dangling(text: str, sections: set[str]) -> list[str]:
    problems = [m.group(0) for m in re.finditer(r"\bDESIGN(\.md)?\b[^\n]{0,12}", text)]
    problems += [m.group(0) for m in re.finditer(r"(?<!docs/)\bQT-NOTES(\.md)?", text)]
    problems += [m.group(0) for m in re.finditer(r"(?<!docs/)ARCHITECTURE\.md", text)]
    problems += [m.group(0) for m in re.finditer(r"docs/ARCHITECTURE\.md §(\d+)", text) if m.group(1) not in sections]
    return problems


def architecture_sections() -> set[str]:
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    return set(re.findall(r"^## (\d+)\. ", text, re.M))


def test_references_point_into_the_repository():
    sections = architecture_sections()
    assert {"1", "2", "3", "4", "5", "6", "7"} <= sections
    assert (REPO / "docs" / "QT-NOTES.md").is_file()
    found = {}
    for path in source_files():
        if path.name == "test_docs.py":
            continue
        problems = dangling(path.read_text(encoding="utf-8"), sections)
        if problems:
            found[str(path.relative_to(REPO))] = problems
    assert found == {}


def test_the_check_sees_a_dangling_reference():
    sections = architecture_sections()
    assert dangling("see DESIGN.md §3", sections) == ["DESIGN.md §3"]
    assert dangling("(QT-NOTES.md)", sections) == ["QT-NOTES.md"]
    assert dangling("docs/ARCHITECTURE.md §42", sections) == ["docs/ARCHITECTURE.md §42"]
    assert dangling("docs/ARCHITECTURE.md §3 and docs/QT-NOTES.md", sections) == []
