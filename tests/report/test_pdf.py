"""The public report as PDF (Qt's own writer): a real PDF, fonts embedded, renders to PNG with
content where the report has it, works without a display and from a worker thread."""

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk.report.public import public_report_html

REPO = Path(__file__).resolve().parents[2]
needs_poppler = pytest.mark.skipif(shutil.which("pdftoppm") is None or shutil.which("pdffonts") is None,
                                   reason="poppler-utils is not installed (scripts/system-deps.sh test installs it)")


@pytest.fixture(scope="module")
def report_html():
    rng = np.random.default_rng(2)
    dense = rng.random((40, 6)) < 0.4
    dense[np.arange(40), np.arange(40) % 6] = True
    data = dpdesk.from_matrix(sp.csr_matrix(dense.astype(np.int64)), [f"x{j}" for j in range(6)], name="clinic")
    data = dpdesk.declare(data, [f"x{j}" for j in range(6)])
    release = dpdesk.release(data, "lpa", epsilon=0.69, bound=2, clamp=True)
    release.report["how_chosen"] = "chosen before looking at results"
    return public_report_html(release, {"release.csv": "a1" * 32, "release.json": "b2" * 32})


@pytest.fixture
def pdf(qapp, report_html):
    # qapp: pytest-qt's QApplication, so this test never leaves a bare QGuiApplication behind
    from dpdesk.gui.pdf import html_to_pdf

    return html_to_pdf(report_html)


def test_it_is_a_pdf(pdf):
    assert pdf.startswith(b"%PDF-1.") and pdf.rstrip().endswith(b"%%EOF")
    assert b"/Creator" in pdf and len(pdf) > 10_000


@needs_poppler
def test_fonts_are_embedded_and_the_text_is_there(pdf, tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    fonts = subprocess.run(["pdffonts", str(path)], check=True, capture_output=True, text=True).stdout
    rows = fonts.splitlines()[2:]
    assert rows, fonts
    assert all(row.split()[-5] == "yes" for row in rows), fonts  # the "emb" column
    info = subprocess.run(["pdfinfo", str(path)], check=True, capture_output=True, text=True).stdout
    assert "A4" in info and "Title:" in info and "clinic" in info
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True, text=True).stdout
    for expected in ("Privacy report", "ε = 0.69", "What this protects", "Privacy budget", "Error to expect",
                     "Negative noisy counts are set to 0", "chosen before looking at results", "a1" * 32):
        assert expected in text


@needs_poppler
def test_it_renders_to_png_with_ink_on_every_page(qapp, pdf, tmp_path):
    from PySide6.QtGui import QImage

    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    subprocess.run(["pdftoppm", "-r", "50", "-png", str(path), str(tmp_path / "page")], check=True)
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) >= 2
    for page in pages:
        image = QImage(str(page))
        assert not image.isNull()
        assert abs(image.height() / image.width() - 297 / 210) < 0.01  # A4 portrait
        grey = np.array([[image.pixelColor(x, y).lightness() for x in range(0, image.width(), 3)]
                         for y in range(0, image.height(), 3)])
        ink = grey < 128
        assert 0.002 < ink.mean() < 0.3  # text, not a blank or black page
        # the 2 cm page margins stay empty (sides and top)
        margin = int(0.07 * grey.shape[1])
        assert not ink[:, :margin].any() and not ink[:, -margin:].any() and not ink[:margin].any()
    first = QImage(str(pages[0]))
    # the title "Privacy report" is dark blue and large near the top
    title = [first.pixelColor(x, y) for y in range(int(0.08 * first.height()), int(0.14 * first.height()))
             for x in range(int(0.15 * first.width()), int(0.5 * first.width()))]
    assert any(c.blue() > c.red() + 40 and c.lightness() < 120 for c in title)


def test_it_works_from_a_worker_thread(qapp, report_html):
    from dpdesk.gui.pdf import html_to_pdf

    results = []
    worker = threading.Thread(target=lambda: results.append(html_to_pdf(report_html)))
    worker.start()
    worker.join(timeout=60)
    assert len(results) == 1 and results[0].startswith(b"%PDF-")


def test_the_cli_writes_the_pdf_without_a_display(tmp_path):
    """A fresh process, no QApplication, no DISPLAY, no QT_QPA_PLATFORM: the CLI's situation."""
    rows = [f"p{k},x{(k * 7) % 5}" for k in range(30)] + [f"p{k},x{(k * 3) % 5}" for k in range(30)]
    csv = tmp_path / "data.csv"
    csv.write_text("person,item\n" + "\n".join(rows) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(DPDESK_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "dpdesk.cli", "release", str(csv), "--mechanism", "lpa",
                             "--epsilon", "1", "--bound", "2", "--out", str(tmp_path / "out"), "--report", "html,pdf",
                             "--items", "from-data", "--items-are-public"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    pdf = (tmp_path / "out" / "privacy-report.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and (tmp_path / "out" / "privacy-report.html").exists()
