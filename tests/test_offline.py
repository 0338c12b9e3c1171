"""Offline use (issue 9): no network during a release, the offline installation from a
wheelhouse, the desktop entry and icons, and (``-m slow``) the standalone bundle.

The wheelhouse test needs the package registry to build the wheelhouse; it is skipped only
outside CI and only when the registry cannot be reached at all. Once the wheelhouse is
built, the offline installation must pass.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import dpdesk
from dpdesk.cli import main
from dpdesk.paths import resources_dir, sample_path

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
ICONS = ROOT / "resources" / "icons"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256)
RELEASE_ARGS = ["--mechanism", "lpa", "--epsilon", "0.69", "--bound", "20", "--items", "from-data", "--items-are-public"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# --- no network during a release ---------------------------------------------------------

class NetworkUsed(AssertionError):
    """Raised by the socket guard: something tried to use the network."""


@pytest.fixture
def socket_guard(monkeypatch):
    """Refuse every way Python opens a network connection or resolves a name; record tries.

    The record matters as much as the refusal: code that caught the error and carried on
    would still fail the test.
    """
    attempts: list[str] = []

    def refuse(what):
        def guard(*args, **kwargs):
            attempts.append(f"{what}{args!r}")
            raise NetworkUsed(f"{what} called with the network guard on: {args!r}")
        return guard

    real_init = socket.socket.__init__

    def guarded_init(self, family=-1, type=-1, proto=-1, fileno=None):
        if fileno is None and family in (socket.AF_INET, socket.AF_INET6, -1):
            attempts.append(f"socket.socket(family={family})")
            raise NetworkUsed(f"an internet socket was created with the network guard on (family {family})")
        real_init(self, family, type, proto, fileno)

    monkeypatch.setattr(socket.socket, "__init__", guarded_init)
    for name in ("connect", "connect_ex", "sendto", "bind"):
        monkeypatch.setattr(socket.socket, name, refuse(f"socket.{name}"))
    for name in ("create_connection", "getaddrinfo", "gethostbyname", "gethostbyname_ex", "socketpair"):
        monkeypatch.setattr(socket, name, refuse(f"socket.{name}"))
    return attempts


def test_the_socket_guard_blocks_connections(socket_guard):
    # controls: each of these would reach the network (or try to) without the guard
    with pytest.raises(NetworkUsed):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    with pytest.raises(NetworkUsed):
        socket.getaddrinfo("localhost", 80)
    with pytest.raises(NetworkUsed):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with pytest.raises(NetworkUsed):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as local:   # may be created, not connected
            local.connect("/nonexistent/dpdesk.sock")
    import urllib.request

    with pytest.raises(NetworkUsed):
        urllib.request.urlopen("http://127.0.0.1:9/", timeout=1)
    assert len(socket_guard) == 5


def test_a_release_opens_no_network_connection(qapp, socket_guard, dpdesk_home, tmp_path, capsys):
    # qapp: pytest-qt's QApplication, so the PDF report never leaves a bare QGuiApplication behind
    data = dpdesk.load(sample_path())
    assert data.summary()["rows"] == 9835
    result = dpdesk.release(dpdesk.declare(data, "from-data", items_are_public=True), "lpa", epsilon=0.69, bound=20)
    assert len(result.values) == 169

    out = tmp_path / "release"
    assert main(["inspect", str(sample_path())]) == 0
    status = main(["release", str(sample_path()), *RELEASE_ARGS, "--out", str(out),
                   "--formats", "csv,json,parquet", "--report", "html,pdf"])
    assert status == 0
    written = sorted(p.name for p in out.iterdir())
    assert written == ["privacy-report.html", "privacy-report.pdf", "release.csv", "release.json", "release.parquet"]
    assert json.loads((out / "release.json").read_text())["epsilon"] == 0.69
    assert main(["ledger", "verify"]) == 0
    assert socket_guard == [], f"network use during a release: {socket_guard}"


# --- desktop entry and icons ---------------------------------------------------------------

def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path.name} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_icons_exist_in_every_size():
    svg = ET.parse(ICONS / "dpdesk.svg").getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg" and svg.get("viewBox") == "0 0 256 256"
    for size in ICON_SIZES:
        assert png_size(ICONS / f"dpdesk-{size}.png") == (size, size)
    # the installed package finds them too (the window icon)
    assert (resources_dir() / "icons" / "dpdesk-256.png").is_file()


def read_desktop_entry(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if line and not line.startswith("#"))


def test_desktop_entry_template():
    entry = read_desktop_entry(PACKAGING / "dpdesk.desktop")
    assert entry["Type"] == "Application"
    assert entry["Name"] == "dpdesk" and entry["Comment"]
    assert entry["Exec"] == "dpdesk gui %f" and entry["Icon"] == "dpdesk"
    assert entry["Categories"] == "Office;Science;"
    assert entry["Terminal"] == "false"


def fake_dpdesk(directory: Path) -> Path:
    """A `dpdesk` program running this checkout's CLI (stands for VENV/bin/dpdesk)."""
    directory.mkdir(parents=True)
    program = directory / "dpdesk"
    program.write_text(f"#!/bin/sh\nexec '{sys.executable}' -c "
                       "'import sys; from dpdesk.cli import main; sys.exit(main())' \"$@\"\n")
    program.chmod(0o755)
    return program


def test_install_desktop_adds_and_removes_the_menu_entry(tmp_path):
    program = fake_dpdesk(tmp_path / "my apps" / "bin")   # a space: Exec must quote it
    data_home = tmp_path / "share"
    env = {**os.environ, "XDG_DATA_HOME": str(data_home), "HOME": str(tmp_path)}
    run = subprocess.run(["bash", str(PACKAGING / "install-desktop.sh"), str(program)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert f"dpdesk {dpdesk.__version__}" in run.stdout

    desktop = data_home / "applications" / "dpdesk.desktop"
    entry = read_desktop_entry(desktop)
    assert entry["Exec"] == f'"{program}" gui %f'
    assert entry["TryExec"] == str(program)
    assert entry["Icon"] == "dpdesk" and entry["Categories"] == "Office;Science;"
    theme = data_home / "icons" / "hicolor"
    assert (theme / "scalable" / "apps" / "dpdesk.svg").read_bytes() == (ICONS / "dpdesk.svg").read_bytes()
    for size in ICON_SIZES:
        assert png_size(theme / f"{size}x{size}" / "apps" / "dpdesk.png") == (size, size)
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr

    run = subprocess.run(["bash", str(PACKAGING / "install-desktop.sh"), "--uninstall"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert not desktop.exists()
    assert not list(theme.rglob("dpdesk.*"))


def test_install_desktop_refuses_a_program_that_is_not_dpdesk(tmp_path):
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "share"), "HOME": str(tmp_path)}
    run = subprocess.run(["bash", str(PACKAGING / "install-desktop.sh"), "/bin/echo"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "is not dpdesk" in run.stderr
    assert not (tmp_path / "share" / "applications" / "dpdesk.desktop").exists()


def test_install_offline_refuses_a_folder_that_is_not_a_wheelhouse(tmp_path):
    run = subprocess.run(["bash", str(PACKAGING / "install-offline.sh"), str(tmp_path), str(tmp_path / "venv")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "not a wheelhouse" in run.stderr
    assert not (tmp_path / "venv").exists()


# --- the offline installation from a wheelhouse -------------------------------------------

NETWORK_ERRORS = ("Failed to establish a new connection", "Temporary failure in name resolution",
                  "Network is unreachable", "Connection refused", "ProxyError", "Read timed out",
                  "ConnectTimeoutError", "No route to host")


def registry_unreachable(tmp_path: Path, build_output: str) -> bool:
    """No network to the registry at all: the build failed on connections, and pip cannot
    download anything from its default index either (no cache, no local configuration)."""
    if not any(error in build_output for error in NETWORK_ERRORS):
        return False
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    try:
        probe = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-cache-dir", "--retries", "1",
             "--timeout", "20", "--only-binary=:all:", "--dest", str(tmp_path / "probe"), "colorama==0.4.6"],
            env=env, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return True
    return probe.returncode != 0


def packaging_env() -> dict[str, str]:
    env = dict(os.environ)
    if sys.version_info[:2] == (3, 11):   # the wheelhouse's target; else install-offline finds python3.11
        env["PYTHON"] = sys.executable
    return env


def test_offline_install_from_the_wheelhouse(tmp_path):
    """build-wheelhouse.sh, then check-offline.sh: the install and the CLI with no network."""
    wheelhouse = tmp_path / "wheelhouse"
    build = subprocess.run(["bash", str(PACKAGING / "build-wheelhouse.sh"), str(wheelhouse)],
                           env=packaging_env(), capture_output=True, text=True, timeout=1800)
    if build.returncode != 0:
        if not in_ci() and registry_unreachable(tmp_path, build.stdout + build.stderr):
            pytest.skip("the package registry cannot be reached from here, so no wheelhouse can be "
                        "built (the offline install check runs in CI)")
        pytest.fail(f"build-wheelhouse.sh failed:\n{build.stdout}\n{build.stderr}")
    wheels = sorted(p.name for p in wheelhouse.glob("*.whl"))
    names = {name.split("-")[0].lower() for name in wheels}
    assert {"dpdesk", "pyside6_essentials", "shiboken6", "numpy", "scipy", "pandas", "pyarrow", "pyqtgraph"} <= names
    for name in wheels:   # Linux x86-64, CPython 3.11 (or pure Python / the stable ABI)
        tags = name[:-len(".whl")].split("-")[-3:]
        assert tags[0] in ("py3", "py2.py3", "cp311", "cp39", "cp310"), name
        assert tags[2] == "any" or all(p.startswith("manylinux") and p.endswith("_x86_64") for p in tags[2].split(".")), name
    requirements = (wheelhouse / "requirements.txt").read_text().splitlines()
    assert len(requirements) == len(wheels) and all("--hash=sha256:" in line for line in requirements)
    for helper in ("install-offline.sh", "install-desktop.sh", "dpdesk.desktop", "icons/dpdesk.svg"):
        assert (wheelhouse / helper).is_file(), helper

    check = subprocess.run(["bash", str(PACKAGING / "check-offline.sh"), str(wheelhouse)],
                           env=packaging_env(), capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert check.returncode == 0, f"check-offline.sh failed:\n{check.stdout}\n{check.stderr}"
    assert "Offline install check passed" in check.stdout
    assert f"dpdesk {dpdesk.__version__}" in check.stdout

    # a damaged copy is refused before anything is installed
    damaged = tmp_path / "damaged"
    shutil.copytree(wheelhouse, damaged, ignore=shutil.ignore_patterns("*.whl"))
    for wheel in wheelhouse.glob("*.whl"):
        if wheel.name.startswith("dpdesk-"):
            (damaged / wheel.name).write_bytes(wheel.read_bytes() + b"\0")
        else:
            (damaged / wheel.name).symlink_to(wheel)
    venv = tmp_path / "damaged-venv"
    run = subprocess.run(["bash", str(damaged / "install-offline.sh"), str(damaged), str(venv)],
                         env=packaging_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode != 0
    assert "hash" in run.stderr.lower()
    assert not (venv / "bin" / "dpdesk").exists()


# --- the standalone bundle (slow: a PyInstaller build takes minutes) -----------------------

@pytest.mark.slow
def test_the_bundle_runs_without_python(tmp_path):
    build = subprocess.run(["bash", str(PACKAGING / "build-bundle.sh")], env=packaging_env(),
                           capture_output=True, text=True, timeout=3600)
    assert build.returncode == 0, f"build-bundle.sh failed:\n{build.stdout}\n{build.stderr}"
    program = PACKAGING / "dist" / "dpdesk" / "dpdesk"
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DPDESK_HOME": str(tmp_path / "home"),
            "QT_QPA_PLATFORM": "offscreen"}

    def bundle(*args):
        run = subprocess.run([str(program), *args], env=bare, capture_output=True, text=True,
                             timeout=300, cwd=tmp_path)
        assert run.returncode == 0, f"dpdesk {' '.join(args)}:\n{run.stdout}\n{run.stderr}"
        return run.stdout

    assert bundle("--version").strip() == f"dpdesk {dpdesk.__version__}"
    assert "--mechanism" in bundle("release", "--help")
    # with no display, `dpdesk gui` says so and names the sample: the bundle's own copy
    no_display = {k: v for k, v in bare.items() if k != "QT_QPA_PLATFORM"}
    run = subprocess.run([str(program), "gui"], env=no_display, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "no display" in run.stderr
    sample = Path(run.stderr.strip().rsplit("The sample dataset is ", 1)[1].rstrip("."))
    resources = PACKAGING / "dist" / "dpdesk" / "_internal" / "dpdesk" / "resources"
    assert sample == resources / "sample" / "groceries.csv.gz" and sample.is_file()
    assert (resources / "report" / "report.css").is_file() and (resources / "icons" / "dpdesk-256.png").is_file()

    figures = json.loads(bundle("inspect", "--json", str(sample)))
    assert (figures["rows"], figures["columns"]) == (9835, 169)
    out = tmp_path / "release"
    written = bundle("release", str(sample), *RELEASE_ARGS, "--out", str(out),
                     "--formats", "csv,json,parquet", "--report", "html,pdf").split()
    assert sorted(Path(p).name for p in written) == ["privacy-report.html", "privacy-report.pdf",
                                                    "release.csv", "release.json", "release.parquet"]
    assert len(json.loads((out / "release.json").read_text())["values"]) == 169
    assert (out / "privacy-report.pdf").read_bytes().startswith(b"%PDF")
    assert "ε = 0.69" in bundle("ledger", "list")
    assert "ledger is intact" in bundle("ledger", "verify")

    # the desktop application starts (offscreen) and stays up on the sample
    app = subprocess.Popen([str(program), "gui", "--sample"], env=bare, cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            app.wait(timeout=15)
    finally:
        app.terminate()
        _, err = app.communicate(timeout=30)
    assert "Traceback" not in err, err
