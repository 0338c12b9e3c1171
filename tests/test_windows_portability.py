"""dpdesk on Windows (issue 30), the parts CI can check on Linux in seconds.

The Windows folder itself is checked under Wine by ``packaging/check-windows.sh`` (too heavy
for CI). Here: every dpdesk module imports on a system without the POSIX-only modules
(``resource``, ``fcntl``) and without ``/proc`` and ``/sys``, as on Windows, and the memory
budget still has a figure there; and a release whose standard output cannot take "ε" (a
Windows code page, an ASCII locale) or cannot be written at all still exits 0 with its ledger
entry recorded — a failure status after the budget is spent would make a script spend it again.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpdesk.cli import safe_output_streams
from dpdesk.paths import sample_path
from dpdesk.privacy.ledger import Ledger

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ["--mechanism", "lpa", "--epsilon", "0.5", "--bound", "20", "--items", "from-data", "--items-are-public"]

# Run before dpdesk is imported: the POSIX-only modules cannot be imported (None in
# sys.modules makes `import resource` raise ImportError, as on Windows), and /proc and /sys do
# not exist for any way Python opens or looks at a file.
WITHOUT_POSIX = r'''
import builtins, io, os, pkgutil, importlib, sys
for name in ("resource", "fcntl"):
    sys.modules[name] = None
looked = []
def hidden(path):
    try:
        text = os.fsdecode(path) if not isinstance(path, int) else ""
    except TypeError:
        return False
    if text.startswith(("/proc", "/sys")):
        looked.append(text)
        return True
    return False
def guard(function):
    def guarded(path, *args, **kwargs):
        if hidden(path):
            raise FileNotFoundError(2, "No such file or directory (no /proc here, as on Windows)", os.fsdecode(path))
        return function(path, *args, **kwargs)
    return guarded
builtins.open = io.open = guard(io.open)
for name in ("open", "stat", "lstat", "listdir", "scandir", "access"):
    setattr(os, name, guard(getattr(os, name)))

import dpdesk
modules = [info.name for info in pkgutil.walk_packages(dpdesk.__path__, "dpdesk.")]
for name in modules:
    importlib.import_module(name)
from dpdesk.data.textio import available_memory, memory_budget
os.environ.pop("DPDESK_MEMORY_LIMIT", None)
budget = memory_budget()
print(json.dumps({"modules": len(modules), "available": available_memory(), "origin": budget.origin,
                  "limit": budget.limit, "looked": sorted(set(looked))}))
'''.replace("import builtins,", "import json, builtins,")


def test_every_module_imports_without_resource_fcntl_or_proc():
    """On Windows `import dpdesk` failed on `import resource` (textio) and `import fcntl`
    (workflow); and where /proc is missing the memory budget must come from elsewhere."""
    run = subprocess.run([sys.executable, "-c", WITHOUT_POSIX], capture_output=True, text=True, timeout=300,
                         cwd=ROOT, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["modules"] >= 80  # every module, the desktop application's included
    # the figure came from the system (sysconf here, GlobalMemoryStatusEx on Windows), not a default
    assert found["available"] and found["available"] > 64 << 20
    # the budget and "available" are two readings of a figure other programs move: equal within 64 MiB
    # (half of all of it would be gigabytes off)
    assert found["origin"].startswith("half of the ")
    assert abs(found["limit"] - max(found["available"] // 2, 64 << 20)) <= 64 << 20, found
    assert "/proc/meminfo" in found["looked"]  # the guard did hide what the budget reads on Linux


def _release(tmp_path, env_changes: dict, stdout, name: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHONIOENCODING", "PYTHONUTF8"))}
    env.update({"DPDESK_HOME": str(tmp_path / "home")}, **env_changes)
    return subprocess.run([sys.executable, "-m", "dpdesk", "release", str(sample_path()), *RELEASE, "--dataset", name,
                           "--out", str(tmp_path / name)], stdout=stdout, stderr=subprocess.PIPE, env=env,
                          timeout=300, cwd=ROOT)


def _recorded(tmp_path, name: str) -> list:
    return [e for e in Ledger.open(tmp_path / "home" / "ledger.sqlite").entries() if e.dataset == name
            and e.kind == "release"]


@pytest.mark.parametrize("env_changes, written", [
    # Windows without PYTHONIOENCODING: the ANSI code page; here an ASCII locale does the same
    ({"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}, "ε".encode("utf-8")),
    # a code page the steward chose: kept, and what it lacks is written as an escape
    ({"PYTHONIOENCODING": "cp1252"}, rb"\u03b5"),
], ids=["ascii-locale", "pythonioencoding-cp1252"])
def test_a_release_whose_stdout_cannot_take_epsilon_exits_0_with_its_entry_recorded(tmp_path, env_changes, written):
    out = tmp_path / "stdout.txt"
    with open(out, "wb") as handle:
        run = _release(tmp_path, env_changes, handle, "groceries-encoding")
    assert run.returncode == 0, run.stderr.decode("utf-8", "replace")[-2000:]
    assert b"Traceback" not in run.stderr
    entries = _recorded(tmp_path, "groceries-encoding")
    assert len(entries) == 1 and entries[0].epsilon == 0.5
    text = out.read_bytes()
    assert f"ledger entry #{entries[0].id}".encode() in text and written in text


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_release_whose_stdout_cannot_be_written_exits_0_with_its_entry_recorded(tmp_path):
    """/dev/full: every write fails (a full disk); the release is done and recorded all the same."""
    with open("/dev/full", "wb") as full:
        run = _release(tmp_path, {}, full, "groceries-full")
    stderr = run.stderr.decode("utf-8", "replace")
    assert run.returncode == 0, stderr[-2000:]
    entries = _recorded(tmp_path, "groceries-full")
    assert len(entries) == 1
    assert f"the release is recorded (ledger entry #{entries[0].id})" in stderr and "Traceback" not in stderr
    assert (tmp_path / "groceries-full" / "release.csv").is_file()


def test_output_streams_write_utf8_to_files_and_escape_what_a_terminal_cannot_show(monkeypatch):
    windows_pipe = io.TextIOWrapper(io.BytesIO(), encoding="cp1252")   # stdout redirected on Windows
    terminal = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    terminal.isatty = lambda: True
    monkeypatch.delenv("PYTHONIOENCODING", raising=False)
    monkeypatch.setattr(sys, "stdout", windows_pipe)
    monkeypatch.setattr(sys, "stderr", terminal)
    safe_output_streams()
    print("ε = 0.5")
    print("ε = 0.5", file=sys.stderr)
    windows_pipe.flush()
    terminal.flush()
    assert windows_pipe.buffer.getvalue() == "ε = 0.5\n".encode("utf-8")
    assert terminal.buffer.getvalue() == b"\\u03b5 = 0.5\n"


def test_the_spill_cleanup_never_signals_another_process_on_windows(monkeypatch, tmp_path):
    """On Windows ``os.kill(pid, 0)`` is Ctrl+C to the process group: the liveness check must not call it."""
    import os
    import sys

    from dpdesk.engine import base

    calls = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: calls.append((pid, sig)))
    monkeypatch.setattr(sys, "platform", "win32")

    class Kernel32:
        def OpenProcess(self, access, inherit, pid):
            return 0

        def GetLastError(self):
            return 87  # ERROR_INVALID_PARAMETER: no such process

    import ctypes

    monkeypatch.setattr(ctypes, "windll", type("WinDLL", (), {"kernel32": Kernel32()})(), raising=False)
    (tmp_path / "run-999999-abc").mkdir()
    base.clear_stale_spill(tmp_path)
    assert calls == [] and not (tmp_path / "run-999999-abc").exists()
