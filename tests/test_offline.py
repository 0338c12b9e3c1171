"""Offline use (issue 9): no network during a release, the offline installation from a
wheelhouse, the desktop entry and icons, and (``-m slow``) the standalone bundle.

The wheelhouse test needs the package registry to build the wheelhouse; it is skipped only
outside CI and only when the registry cannot be reached at all. Once the wheelhouse is
built, the offline installation must pass.
"""

from __future__ import annotations

import hashlib
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


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """One wheelhouse built by build-wheelhouse.sh for this module's tests (treat as read-only)."""
    tmp_path = tmp_path_factory.mktemp("wheelhouse-build")
    wheelhouse = tmp_path / "wheelhouse"
    build = subprocess.run(["bash", str(PACKAGING / "build-wheelhouse.sh"), str(wheelhouse)],
                           env=packaging_env(), capture_output=True, text=True, timeout=1800)
    if build.returncode != 0:
        if not in_ci() and registry_unreachable(tmp_path, build.stdout + build.stderr):
            pytest.skip("the package registry cannot be reached from here, so no wheelhouse can be "
                        "built (the offline install check runs in CI)")
        pytest.fail(f"build-wheelhouse.sh failed:\n{build.stdout}\n{build.stderr}")
    return wheelhouse


TARGET_PYTHONS = ("3.11", "3.12", "3.13")


def test_the_wheelhouse_holds_wheels_for_each_target_python(wheelhouse, tmp_path):
    wheels = sorted(p.name for p in wheelhouse.glob("*.whl"))
    names = {name.split("-")[0].lower() for name in wheels}
    assert {"dpdesk", "pyside6_essentials", "shiboken6", "numpy", "scipy", "pandas", "pyarrow", "pyqtgraph",
            "openpyxl", "pyreadstat", "narwhals"} <= names  # Excel and SPSS/Stata/SAS files (issue 18)
    for name in wheels:   # Linux x86-64, CPython 3.11-3.13 (or pure Python / the stable ABI)
        tags = name[:-len(".whl")].split("-")[-3:]
        assert tags[0] in ("py3", "py2.py3", "cp311", "cp312", "cp313", "cp39", "cp310"), name
        assert tags[2] == "any" or all(p.startswith("manylinux") and p.endswith("_x86_64") for p in tags[2].split(".")), name
    for compiled in ("numpy", "scipy", "pandas", "pyarrow", "pyreadstat"):
        for version in TARGET_PYTHONS:
            tag = "cp" + version.replace(".", "")
            assert any(w.lower().startswith(compiled + "-") and f"-{tag}-{tag}-" in w for w in wheels), (compiled, tag)
    requirements = (wheelhouse / "requirements.txt").read_text().splitlines()
    assert all("--hash=sha256:" in line for line in requirements)
    assert sum(line.count("--hash=") for line in requirements) == len(wheels)
    for helper in ("install-offline.sh", "install-desktop.sh", "check-host.py", "dpdesk.desktop", "icons/dpdesk.svg"):
        assert (wheelhouse / helper).is_file(), helper
    # pip itself agrees that every target Python gets a complete, hash-checked set from it alone,
    # on Debian 12's glibc, the oldest with a Python the wheelhouse serves (pip takes the platform
    # tags it is given, no newer ones)
    platforms = [arg for minor in range(36, 16, -1) for arg in ("--platform", f"manylinux_2_{minor}_x86_64")]
    for version in TARGET_PYTHONS:
        run = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
             "--no-index", "--find-links", str(wheelhouse), "--only-binary=:all:", "--require-hashes",
             "--python-version", version, *platforms, "--implementation", "cp",
             "--target", str(tmp_path / version), "-r", str(wheelhouse / "requirements.txt")],
            env={**os.environ, "PIP_CONFIG_FILE": os.devnull}, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"Python {version}: {run.stderr}"


def test_offline_install_from_the_wheelhouse(wheelhouse, tmp_path):
    """check-offline.sh on the built wheelhouse: the install and the CLI with no network."""
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


# --- verify before you install: SHA256SUMS and its OpenSSH signature ---------------------

VERIFY_MARKER = "<!-- verify-commands"


def readme_verify_commands() -> list[str]:
    """The command lines of packaging/README.md's verification block, as a steward pastes them."""
    text = (PACKAGING / "README.md").read_text(encoding="utf-8")
    after = text[text.index(VERIFY_MARKER):]
    block = after[after.index("```bash\n") + len("```bash\n"):]
    return [line for line in block[:block.index("```")].splitlines() if line.strip() and not line.startswith("#")]


def published_key_line() -> str:
    return (PACKAGING / "dpdesk-release.pub").read_text(encoding="utf-8").strip()


@pytest.fixture(scope="module")
def throwaway_key(tmp_path_factory) -> tuple[Path, str]:
    """A release key made for the tests (the project's private key never is in the repository)."""
    folder = tmp_path_factory.mktemp("key")
    key = folder / "dpdesk-release"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test key", "-f", str(key)], check=True)
    kind, blob = (folder / "dpdesk-release.pub").read_text().split()[:2]
    return key, f'release@dpdesk namespaces="dpdesk-release" {kind} {blob}'


def make_release(wheelhouse: Path, out: Path, key: Path, allowed_line: str) -> Path:
    allowed = out.parent / f"{out.name}-allowed_signers"
    allowed.write_text(allowed_line + "\n")
    env = {**os.environ, "DPDESK_SIGNING_KEY": str(key), "ALLOWED_SIGNERS": str(allowed)}
    run = subprocess.run(["bash", str(PACKAGING / "make-release.sh"), "--wheelhouse", str(wheelhouse), "--no-bundle",
                          "--no-windows", str(out)], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return out / f"dpdesk-{dpdesk.__version__}"


def run_readme_line(line: str, release: Path, key_line: str) -> subprocess.CompletedProcess:
    """One line of the README's block, run in the release folder; the published key is swapped
    for the test's own (the only change to what the README says)."""
    line = line.replace(published_key_line(), key_line)
    return subprocess.run(["bash", "-c", line], cwd=release, capture_output=True, text=True, timeout=300)


def replace_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.unlink()   # a new file: the release folder's copies may be hard links
    path.write_bytes(bytes(data))


def test_the_readme_publishes_the_repositorys_release_key(tmp_path):
    line = published_key_line()
    assert line.startswith('release@dpdesk namespaces="dpdesk-release" ssh-ed25519 ')
    assert any(line in command for command in readme_verify_commands())
    assert line in (ROOT / "README.md").read_text(encoding="utf-8")   # the project's README shows it too
    public = tmp_path / "key.pub"
    public.write_text(" ".join(line.split()[2:]) + "\n")
    fingerprint = subprocess.run(["ssh-keygen", "-l", "-f", str(public)], capture_output=True, text=True)
    assert fingerprint.returncode == 0 and "(ED25519)" in fingerprint.stdout
    # no private key is ever committed
    tracked = subprocess.run(["git", "-C", str(ROOT), "grep", "-l", "PRIVATE KEY"], capture_output=True, text=True)
    assert [f for f in tracked.stdout.split() if not f.startswith("tests/")] == [], tracked.stdout


def test_readme_commands_verify_a_signed_release_and_catch_a_changed_byte(wheelhouse, throwaway_key, tmp_path):
    key, key_line = throwaway_key
    release = make_release(wheelhouse, tmp_path / "out", key, key_line)
    # SHA256SUMS lists every file that travels, with paths relative to the folder it is in
    listed = {line.split("  ", 1)[1] for line in (release / "SHA256SUMS").read_text().splitlines()}
    present = {str(p.relative_to(release)) for p in release.rglob("*") if p.is_file()}
    assert listed == present - {"SHA256SUMS", "SHA256SUMS.sig"}
    assert {"wheelhouse/install-offline.sh", "wheelhouse/requirements.txt", "wheelhouse/check-host.py"} <= listed
    assert any(name.startswith("wheelhouse/dpdesk-") and name.endswith(".whl") for name in listed)

    commands = readme_verify_commands()
    checksum = [c for c in commands if c.startswith("sha256sum -c")]
    verify = [c for c in commands if c.startswith("ssh-keygen -Y verify")]
    assert len(checksum) == 1 and len(verify) == 1
    for line in commands:   # exactly as written, in the folder the README names
        run = run_readme_line(line, release, key_line)
        assert run.returncode == 0, f"{line}\n{run.stdout}\n{run.stderr}"
    good = run_readme_line(verify[0], release, key_line)
    assert "Good \"dpdesk-release\" signature for release@dpdesk" in good.stdout + good.stderr

    # one changed byte in a script that travels: the checksums catch it
    script = release / "wheelhouse" / "install-offline.sh"
    original = script.read_bytes()
    replace_one_byte(script)
    run = run_readme_line(checksum[0], release, key_line)
    assert run.returncode != 0 and "wheelhouse/install-offline.sh: FAILED" in run.stdout
    script.unlink()
    script.write_bytes(original)
    assert run_readme_line(checksum[0], release, key_line).returncode == 0

    # one changed byte in SHA256SUMS itself (an attacker's new sums): the signature catches it
    sums = release / "SHA256SUMS"
    original = sums.read_bytes()
    replace_one_byte(sums)
    run = run_readme_line(verify[0], release, key_line)
    assert run.returncode != 0 and "Good" not in run.stdout + run.stderr
    sums.unlink()
    sums.write_bytes(original)

    # a release signed with any other key does not verify against the published one
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    (release / "SHA256SUMS.sig").unlink()   # (ssh-keygen would ask before overwriting it)
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(other), "-n", "dpdesk-release", str(sums)],
                   check=True, capture_output=True)
    run = run_readme_line(verify[0], release, key_line)
    assert run.returncode != 0 and "Good" not in run.stdout + run.stderr
    assert "SHA256SUMS.sig" in {p.name for p in release.iterdir()}


def test_sign_release_refuses_a_key_that_is_not_the_published_one(throwaway_key, tmp_path):
    key, _ = throwaway_key
    folder = tmp_path / "release"
    folder.mkdir()
    (folder / "SHA256SUMS").write_text("0" * 64 + "  x\n")
    env = {**os.environ, "DPDESK_SIGNING_KEY": str(key)}   # checked against packaging/dpdesk-release.pub
    run = subprocess.run(["bash", str(PACKAGING / "sign-release.sh"), str(folder)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "does not verify" in run.stderr
    env.pop("DPDESK_SIGNING_KEY")
    run = subprocess.run(["bash", str(PACKAGING / "sign-release.sh"), str(folder)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "DPDESK_SIGNING_KEY" in run.stderr


def test_two_builds_of_the_dpdesk_wheel_are_byte_identical(tmp_path):
    digests = []
    for n, umask in enumerate(("022", "002")):
        out = tmp_path / f"build{n}"
        run = subprocess.run(["bash", "-c", f'umask {umask}; source "$1/lib.sh"; build_dpdesk_wheel "$2" "$3" "$4"',
                              "build", str(PACKAGING), str(ROOT), str(out), sys.executable],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        (wheel,) = out.glob("dpdesk-*.whl")
        digests.append(hashlib.sha256(wheel.read_bytes()).hexdigest())
    assert digests[0] == digests[1]


# --- what the machine needs --------------------------------------------------------------

def test_the_readme_lists_exactly_the_packages_dpdesk_checks_for():
    from dpdesk.hostlibs import packages

    text = (PACKAGING / "README.md").read_text(encoding="utf-8")
    listed = text[text.index("<!-- host-packages -->"):].split("apt-get install", 1)[1].split("```")[0].split()
    listed = [name for name in listed if name != "\\" and not name.startswith("-")]
    assert listed == packages("window")


MISSING_LIBRARY = """
import sys
import dpdesk.hostlibs as hostlibs
hostlibs.QT_WINDOW.append(("libdpdesk-test-absent.so.7", "libdpdesk-test-absent7"))
from dpdesk.cli import main
sys.exit(main(["gui"]))
"""


def test_gui_names_a_missing_system_library_in_one_line(tmp_path):
    # a display that does not exist: without the check, Qt would abort trying to reach it
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update(DISPLAY=":97", DPDESK_HOME=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", MISSING_LIBRARY], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert "libdpdesk-test-absent7" in run.stderr and "apt-get install" in run.stderr


def test_a_library_qt_cannot_load_is_one_line(monkeypatch, capsys):
    import dpdesk.cli as cli

    def needs_libgl(args):   # the exact error Python gives when Qt's libGL.so.1 is absent
        raise ImportError("libGL.so.1: cannot open shared object file: No such file or directory")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser._subparsers._group_actions[0].choices["mechanisms"].set_defaults(func=needs_libgl)
    assert cli.main(["mechanisms"]) == 1
    err = capsys.readouterr().err
    assert err == ("dpdesk: error: the system library libGL.so.1 is missing; install the Debian/Ubuntu package libgl1 "
                   "(as root: apt-get install libgl1).\n")


def test_the_wheelhouse_check_host_is_dpdesks_own(wheelhouse):
    assert (wheelhouse / "check-host.py").read_bytes() == (ROOT / "dpdesk" / "hostlibs.py").read_bytes()


# --- the standalone bundle (slow: a PyInstaller build takes minutes) -----------------------

@pytest.mark.slow
@pytest.mark.timeout(3900)  # the PyInstaller build alone may take its hour
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
    # Excel, SPSS, Stata, SAS transport and SAS7BDAT files: openpyxl and pyreadstat are in the bundle
    from tests.data.survey_files import KINDS, write as write_survey

    for kind in KINDS:
        survey = json.loads(bundle("inspect", "--json", "--format", "records", str(write_survey(tmp_path, kind))))
        assert survey["rows"] == 5, (kind, survey)
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


def test_an_old_c_library_is_named_before_qt_loads(monkeypatch):
    import dpdesk.hostlibs as hostlibs

    monkeypatch.setattr(hostlibs, "glibc_version", lambda: (2, 31))   # Debian 11
    sentence = hostlibs.missing_sentence("window")
    assert sentence.count(".") >= 2 and "\n" not in sentence
    assert "glibc 2.34 or newer" in sentence and "has 2.31" in sentence and "command line" in sentence
    monkeypatch.setattr(hostlibs, "glibc_version", lambda: (2, 36))   # Debian 12: the libraries decide
    assert hostlibs.missing_sentence("qt") is None or "glibc" not in hostlibs.missing_sentence("qt")
