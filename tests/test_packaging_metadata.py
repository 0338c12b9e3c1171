"""pyproject.toml installs every bundled resource, with metadata current setuptools accepts
without a warning (an SPDX licence; resource folders declared as packages, not implied)."""

import fnmatch
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def pyproject() -> dict:
    with open(REPO / "pyproject.toml", "rb") as file:
        return tomllib.load(file)


def installed_resources(config: dict) -> set[str]:
    setuptools = config["tool"]["setuptools"]
    packages, patterns = setuptools["packages"], setuptools["package-data"]
    found = set()
    for path in (REPO / "resources").rglob("*"):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".py":
            continue
        folder = path.parent.relative_to(REPO / "resources").parts
        package = ".".join(("dpdesk", "resources") + folder)
        if package in packages and any(fnmatch.fnmatch(path.name, p) for p in patterns.get(package, ())):
            found.add(path.relative_to(REPO).as_posix())
    return found


def test_every_resource_file_is_installed():
    every = {p.relative_to(REPO).as_posix() for p in (REPO / "resources").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".py"}
    assert {"resources/fonts/DejaVuSans.ttf", "resources/fonts/DejaVuSans-Bold.ttf", "resources/fonts/LICENSE",
            "resources/sample/groceries.csv.gz", "resources/report/report.css",
            "resources/help/pages/data.md", "resources/help/terms/epsilon.md", "resources/help/mechanisms/lpa.md",
            "resources/help/pictures/lpa.svg"} <= every
    assert installed_resources(pyproject()) == every


def test_a_forgotten_folder_is_noticed():
    config = pyproject()
    config["tool"]["setuptools"]["packages"].remove("dpdesk.resources.fonts")
    assert "resources/fonts/DejaVuSans.ttf" not in installed_resources(config)


def test_metadata_without_deprecated_forms():
    config = pyproject()
    assert config["project"]["license"] == "MIT"  # SPDX expression, not the deprecated {text = …} table
    requires = config["build-system"]["requires"]
    assert any(r.replace(" ", "").startswith("setuptools>=77") for r in requires)
    dependencies = " ".join(config["project"]["dependencies"])
    assert "fpdf2" in dependencies and "matplotlib" in dependencies
