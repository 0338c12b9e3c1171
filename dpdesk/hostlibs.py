"""The system libraries dpdesk takes from the machine, and the Debian packages that hold them.

Python's own packages (and the bundle) carry Qt itself; Qt loads OpenGL, fonts, GLib, D-Bus and,
for a window, the X11/xcb libraries from the system. When one is missing, dpdesk says which
Debian package to install in one sentence instead of failing inside Qt with a traceback.

This module is the one list of them: the README's package list is tested against it, the
bundle and ``dpdesk gui`` check it before loading Qt, and ``install-offline.sh`` runs this file
as a script (it needs only the standard library, so it runs before dpdesk is installed):

    python3 hostlibs.py window            prints what is missing (exit 1), nothing if all is there
    python3 hostlibs.py --packages window  the Debian packages a window needs, one line
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

# (shared library, Debian package) that Qt's core and graphics libraries load, even offscreen
QT_BASE = [
    ("libGL.so.1", "libgl1"), ("libEGL.so.1", "libegl1"), ("libfontconfig.so.1", "libfontconfig1"),
    ("libfreetype.so.6", "libfreetype6"), ("libglib-2.0.so.0", "libglib2.0-0"),
    ("libgthread-2.0.so.0", "libglib2.0-0"), ("libdbus-1.so.3", "libdbus-1-3"),
    ("libxkbcommon.so.0", "libxkbcommon0"),
]
# and, for a window on an X11 display (also XWayland), Qt's xcb platform plugin
QT_WINDOW = [
    ("libX11.so.6", "libx11-6"), ("libX11-xcb.so.1", "libx11-xcb1"), ("libxcb.so.1", "libxcb1"),
    ("libxcb-cursor.so.0", "libxcb-cursor0"), ("libxcb-icccm.so.4", "libxcb-icccm4"),
    ("libxcb-image.so.0", "libxcb-image0"), ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
    ("libxcb-randr.so.0", "libxcb-randr0"), ("libxcb-render-util.so.0", "libxcb-render-util0"),
    ("libxcb-render.so.0", "libxcb-render0"), ("libxcb-shape.so.0", "libxcb-shape0"),
    ("libxcb-shm.so.0", "libxcb-shm0"), ("libxcb-sync.so.1", "libxcb-sync1"), ("libxcb-util.so.1", "libxcb-util1"),
    ("libxcb-xfixes.so.0", "libxcb-xfixes0"), ("libxcb-xkb.so.1", "libxcb-xkb1"),
    ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
]
# text on screen needs at least one font; this one is small and on every Debian desktop
FONT_PACKAGE = "fonts-dejavu-core"
FONT_DIRS = ["/usr/share/fonts", "/usr/local/share/fonts", "~/.local/share/fonts", "~/.fonts"]
FONT_SUFFIXES = (".ttf", ".otf", ".ttc", ".pfb", ".pcf", ".pcf.gz")

#: the C library the pinned Qt (PySide6-Essentials 6.10.3, manylinux_2_34 wheels) was built against:
#: on an older one (Debian 11: 2.31) Qt cannot load at all, whatever is installed
QT_GLIBC = (2, 34)

PURPOSES = ("window", "qt")
WHAT = {"window": "dpdesk's window", "qt": "dpdesk's Qt parts"}


def needs(purpose: str) -> list[tuple[str, str]]:
    """(library, package) pairs for "window" (the desktop application) or "qt" (Qt offscreen)."""
    return QT_BASE + QT_WINDOW if purpose == "window" else list(QT_BASE)


def library_loads(name: str) -> bool:
    """Whether the dynamic loader finds ``name`` (as Qt would: LD_LIBRARY_PATH, then the system)."""
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def has_a_font() -> bool:
    for folder in FONT_DIRS:
        path = Path(os.path.expanduser(folder))
        if path.is_dir() and any(f.name.lower().endswith(FONT_SUFFIXES) for f in path.rglob("*")):
            return True
    return False


def packages(purpose: str) -> list[str]:
    """Every Debian package ``purpose`` ("window" or "qt") needs, in a stable order."""
    names = list(dict.fromkeys(package for _, package in needs(purpose)))
    return names + [FONT_PACKAGE] if purpose == "window" else names


def missing_packages(purpose: str) -> list[str]:
    """The Debian packages whose libraries (or, for a window, any font) this machine lacks."""
    missing = [package for library, package in needs(purpose) if not library_loads(library)]
    if purpose == "window" and not has_a_font():
        missing.append(FONT_PACKAGE)
    return list(dict.fromkeys(missing))


def glibc_version() -> tuple[int, int] | None:
    """This machine's C library version (None where it is not glibc)."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):  # AttributeError: no confstr (Windows)
        return None
    parts = text.split()
    if len(parts) != 2 or parts[0] != "glibc":
        return None
    try:
        major, minor = parts[1].split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


def missing_sentence(purpose: str) -> str | None:
    """One sentence naming what is missing and the command that installs it (None: all there)."""
    if not sys.platform.startswith("linux"):  # Windows: Qt's libraries come with PySide6's wheel
        return None
    glibc = glibc_version()
    if glibc is not None and glibc < QT_GLIBC:
        return (f"{WHAT[purpose]} needs glibc {QT_GLIBC[0]}.{QT_GLIBC[1]} or newer (Debian 12, Ubuntu 22.04, "
                f"RHEL 9) and this machine has {glibc[0]}.{glibc[1]}; the command line (inspect, release, "
                "reports) works here.")
    missing = missing_packages(purpose)
    if not missing:
        return None
    listed = " ".join(missing)
    return (f"{WHAT[purpose]} needs system libraries this machine lacks; install the Debian/Ubuntu "
            f"package{'s' if len(missing) > 1 else ''} {', '.join(missing)} (as root: apt-get install {listed}).")


def package_for(library: str) -> str | None:
    """The Debian package holding a shared library that failed to load (from an error message)."""
    for name, package in QT_BASE + QT_WINDOW:
        if name in library:
            return package
    return None


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--packages" and argv[1] in PURPOSES:
        print(" ".join(packages(argv[1])))
        return 0
    if len(argv) != 1 or argv[0] not in PURPOSES:
        print("usage: hostlibs.py [--packages] window|qt", file=sys.stderr)
        return 2
    sentence = missing_sentence(argv[0])
    if sentence:
        print(sentence)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
