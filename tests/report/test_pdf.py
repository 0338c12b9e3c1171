"""Reports as PDF (fpdf2, pure Python): a real A4 PDF with the shipped fonts embedded and its
text readable, a heading never alone at the foot of a page, table headers repeated, charts as
vector drawings with alternative text, the internal label on every page; no Qt, no display
and no system font needed."""

import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk.report.internal import LABEL, internal_report_html
from dpdesk.report.pdf import html_to_pdf, parse_report
from dpdesk.report.public import page, public_report_html, table
from tests.conftest import DATA

from tests.secure_run import secure_run

REPO = Path(__file__).resolve().parents[2]
POPPLER = ("pdftotext", "pdftoppm", "pdffonts", "pdfinfo")


def _poppler():
    if all(shutil.which(tool) for tool in POPPLER):
        return
    if os.environ.get("CI"):  # CI installs poppler (scripts/system-deps.sh test): there a missing tool fails
        pytest.fail("poppler-utils is missing in CI: scripts/system-deps.sh test should have installed it")
    pytest.skip("poppler-utils is not installed (scripts/system-deps.sh test installs it)")


def pdf_pages_text(path: Path) -> list[str]:
    _poppler()
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True,
                          text=True).stdout
    return text.split("\f")[:-1]


@pytest.fixture(scope="module")
def report_html():
    rng = np.random.default_rng(2)
    dense = rng.random((40, 6)) < 0.4
    dense[np.arange(40), np.arange(40) % 6] = True
    data = dpdesk.from_matrix(sp.csr_matrix(dense.astype(np.int64)), [f"x{j}" for j in range(6)], name="clinic")
    data = dpdesk.declare(data, [f"x{j}" for j in range(6)])
    release = secure_run(data, "lpa", epsilon=0.69, bound=2, clamp=True)
    release.report["how_chosen"] = "chosen before looking at results"
    return public_report_html(release, {"release.csv": "a1" * 32, "release.json": "b2" * 32})


@pytest.fixture(scope="module")
def pdf_path(report_html, tmp_path_factory):
    path = tmp_path_factory.mktemp("pdf") / "report.pdf"
    path.write_bytes(html_to_pdf(report_html))
    return path


def test_it_is_a_pdf(pdf_path):
    pdf = pdf_path.read_bytes()
    assert pdf.startswith(b"%PDF-1.") and pdf.rstrip().endswith(b"%%EOF")
    assert b"/Creator (dpdesk)" in pdf and b"/Lang (en)" in pdf and len(pdf) > 10_000


def test_fonts_are_embedded_and_the_text_is_there(pdf_path):
    _poppler()
    fonts = subprocess.run(["pdffonts", str(pdf_path)], check=True, capture_output=True, text=True).stdout
    rows = fonts.splitlines()[2:]
    assert rows and all("DejaVuSans" in row for row in rows), fonts
    assert all(row.split()[-5] == "yes" for row in rows), fonts  # the "emb" column
    info = subprocess.run(["pdfinfo", str(pdf_path)], check=True, capture_output=True, text=True).stdout
    assert "A4" in info and re.search(r"Title:\s+Privacy report — clinic", info)
    text = "".join(pdf_pages_text(pdf_path))
    for expected in ("Privacy report", "ε = 0.69", "What this protects", "Privacy budget", "Error to expect",
                     "Negative noisy counts are set to 0", "chosen before looking at results", "a1" * 32,
                     "Belief before", "at most 66.6%", "page 1 of"):
        assert expected in text, expected


def test_every_section_is_in_the_outline(pdf_path, report_html):
    headings = re.findall(r"<h2>(.*?)</h2>", report_html)
    pdf = pdf_path.read_bytes()
    assert b"/Outlines" in pdf
    for heading in headings:
        title = heading.encode("utf-16-be")
        assert b"<FEFF" + title.hex().upper().encode() in pdf or heading.encode() in pdf, heading


def test_it_renders_to_png_with_ink_on_every_page(pdf_path, tmp_path):
    from PIL import Image

    _poppler()
    subprocess.run(["pdftoppm", "-r", "50", "-png", str(pdf_path), str(tmp_path / "page")], check=True)
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) >= 2
    for path in pages:
        image = Image.open(path).convert("RGB")
        assert abs(image.height / image.width - 297 / 210) < 0.01  # A4 portrait
        grey = np.asarray(image.convert("L"))
        ink = grey < 128
        body = ink[:int(0.9 * ink.shape[0])]  # above the footer line (page number)
        assert 0.0003 < body.mean() and ink.mean() < 0.3  # text on every page, not a blank or black page
        margin = int(0.07 * grey.shape[1])  # the 18 mm page margins stay empty (sides and top)
        assert not ink[:, :margin].any() and not ink[:, -margin:].any() and not ink[:margin].any()
    first = np.asarray(Image.open(pages[0]).convert("RGB")).astype(int)
    # the title "Privacy report" is dark blue and large near the top
    band = first[int(0.05 * first.shape[0]):int(0.1 * first.shape[0]), int(0.08 * first.shape[1]):int(0.5 * first.shape[1])]
    red, blue = band[..., 0], band[..., 2]
    assert ((blue > red + 40) & (band.mean(axis=2) < 120)).sum() > 50


@pytest.mark.parametrize("cycle", [5, 9])
def test_no_page_ends_with_a_heading(tmp_path, cycle):
    # 40 sections of different heights: with these cycles a heading falls at the foot of a page unless moved
    body = ["<h1>Layout</h1>"]
    for k in range(40):
        body.append(f"<h2>Section {k}</h2>")
        body.append("<p>" + "words that fill the line " * (2 + k % cycle) + "</p>")
    path = tmp_path / "layout.pdf"
    path.write_bytes(html_to_pdf(page("Layout test", "\n".join(body))))
    pages = pdf_pages_text(path)
    assert len(pages) >= 3
    for text in pages:
        lines = [line.strip() for line in text.splitlines() if line.strip() and "page " not in line]
        assert not lines[-1].startswith("Section "), lines[-3:]
    every = "".join(pages)
    assert all(f"Section {k}" in every for k in range(40))


def test_a_long_table_repeats_its_header_row_on_every_page(tmp_path):
    rows = [(f"item {k}", f"{k * 7:,}") for k in range(150)]
    path = tmp_path / "table.pdf"
    path.write_bytes(html_to_pdf(page("Table test", "<h2>Counts</h2>" + table(rows, ["Item", "Count"], numeric=(1,)))))
    pages = pdf_pages_text(path)
    assert len(pages) >= 3
    for text in pages:
        assert re.search(r"Item\s+Count", text)
    assert "item 149" in pages[-1] and "1,043" in pages[-1]


def test_the_parser_reads_what_the_reports_write(report_html):
    document = parse_report(report_html)
    assert document.title == "Privacy report — clinic" and document.lang == "en" and not document.label
    kinds = [type(block).__name__ for block in document.blocks]
    assert kinds[0] == "Heading" and "Table" in kinds and "Paragraph" in kinds
    budget = next(b for b in document.blocks if type(b).__name__ == "Table"
                  and [c.runs[0].text for c in b.rows[0]][:2] == ["Step", "ε"])
    assert all(c.header for c in budget.rows[0]) and budget.rows[1][1].numeric and not budget.rows[1][0].numeric
    guarantee = next(b for b in document.blocks if type(b).__name__ == "Paragraph" and "factor of" in
                     "".join(r.text for r in b.runs))
    assert any(r.sup and r.text == "ε" for r in guarantee.runs)  # e<sup>ε</sup>


@pytest.fixture(scope="module")
def internal_pdf(tmp_path_factory):
    data = dpdesk.load(DATA / "groceries.csv.gz")
    release = dpdesk.release(data, "lpa", epsilon=0.5, bound=10, rng=3)
    html = internal_report_html(data, release)
    path = tmp_path_factory.mktemp("internal") / "internal.pdf"
    path.write_bytes(html_to_pdf(html))
    return path, html


def test_the_internal_report_is_labelled_on_every_page_and_keeps_its_charts(internal_pdf):
    path, html = internal_pdf
    pages = pdf_pages_text(path)
    assert len(pages) >= 2
    for text in pages:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        assert lines[0] == LABEL and LABEL in lines[-2]  # at the top and at the foot of every page
    pdf = path.read_bytes()
    titles = re.findall(r"<title>(.*?)</title>", html)[1:]  # the page's own title first, then the charts'
    assert len(titles) == 3
    for title in titles:  # each chart is in the structure tree as a figure with its alternative text
        assert f"/Alt ({title})".encode() in pdf or title.encode("utf-16-be") in pdf, title
    assert pdf.count(b"/S /Figure") == 3


def test_charts_are_drawn_as_vectors_with_dark_text(internal_pdf, tmp_path):
    from PIL import Image

    path, _ = internal_pdf
    _poppler()
    images = subprocess.run(["pdfimages", "-list", str(path)], capture_output=True, text=True).stdout
    assert len(images.splitlines()) <= 2  # no raster image: the charts are paths
    # page 2 holds the first histogram: its axis labels are dark, its bars blue
    subprocess.run(["pdftoppm", "-r", "60", "-f", "1", "-l", "3", "-png", str(path), str(tmp_path / "p")], check=True)
    pixels = np.concatenate([np.asarray(Image.open(p).convert("RGB")).reshape(-1, 3).astype(int)
                             for p in sorted(tmp_path.glob("p-*.png"))])
    bars = (pixels[:, 2] > 130) & (pixels[:, 0] < 90) & (pixels[:, 1] < 130)
    assert bars.sum() > 2000


def test_it_works_from_a_worker_thread(report_html):
    results = []
    worker = threading.Thread(target=lambda: results.append(html_to_pdf(report_html)))
    worker.start()
    worker.join(timeout=60)
    assert len(results) == 1 and results[0].startswith(b"%PDF-")


def _csv(tmp_path) -> Path:
    rows = [f"p{k},x{(k * 7) % 5}" for k in range(30)] + [f"p{k},x{(k * 3) % 5}" for k in range(30)]
    path = tmp_path / "data.csv"
    path.write_text("person,item\n" + "\n".join(rows) + "\n")
    return path


def test_the_cli_writes_both_reports_as_pdf_without_a_display_or_any_system_font(tmp_path):
    """A fresh process with no display, no Qt platform, and fontconfig finding no font at all."""
    empty = tmp_path / "fonts.conf"
    empty.write_text('<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig></fontconfig>\n')
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(DPDESK_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO), FONTCONFIG_FILE=str(empty),
               FONTCONFIG_PATH=str(tmp_path), MPLCONFIGDIR=str(tmp_path / "mpl"))
    if shutil.which("fc-list"):
        listed = subprocess.run(["fc-list"], env=env, capture_output=True, text=True).stdout
        assert listed.strip() == ""  # the configuration really hides every font
    out = tmp_path / "out"
    code = ("import sys, runpy; sys.argv = ['dpdesk'] + sys.argv[1:]; "
            "runpy.run_module('dpdesk.cli', run_name='__main__'); ")
    result = subprocess.run([sys.executable, "-c", code, "release", str(_csv(tmp_path)), "--mechanism", "lpa",
                             "--epsilon", "1", "--bound", "2", "--out", str(out), "--report", "html,pdf",
                             "--internal-report", "--internal-out", str(tmp_path / "internal"), "--items", "from-data",
                             "--items-are-public"], env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    public = pdf_pages_text(out / "privacy-report.pdf")
    assert "Privacy report" in public[0] and "What this protects" in "".join(public)
    (internal_pdf_path,) = (tmp_path / "internal").glob("entry-*-internal-report-NOT-FOR-PUBLICATION.pdf")
    internal = pdf_pages_text(internal_pdf_path)
    assert all(LABEL in text for text in internal) and "The true data" in "".join(internal)


def test_glyphs_of_a_coloured_text_keep_their_colour_in_the_pdf():
    # matplotlib draws text as <use> glyphs inside a group coloured by its style; fpdf2 would paint them
    # with whatever fill colour it had last unless the colour is written on each <use>
    from dpdesk.report import charts
    from dpdesk.report.pdf import _svg_for_fpdf

    svg = charts.histogram([3, 5], [0, 1, 2], "items per person", "people", markers=(1,), marker_label="declared Δ")
    svg = svg[svg.index("<svg"):svg.rindex("</svg>") + 6]
    fixed = _svg_for_fpdf(svg).decode("utf-8")
    assert "<title>" not in fixed
    red_text = re.search(r'<g style="fill: #b3261e"[^>]*>(.*?)</g>', fixed, re.S)
    assert red_text, "the marker label is drawn in red"
    uses = re.findall(r"<use [^>]*>", red_text.group(1))
    assert uses and all("fill: #b3261e" in use for use in uses)


def test_text_that_looks_like_markup_stays_text(tmp_path):
    # a steward's words go into cells and paragraphs: never a link, never bold by accident
    html = page("Markup test", "<h2>Words</h2>" + table(
        [("<b>Mechanism</b>", "see [the site](https://example.org) **now**"), ("Note", "a -- b __c__ \\\\d")],
        ["Fact", "Value"]) + "<p>[x](https://example.org) **y**</p>"
        # a partly bold cell makes the table use fpdf2's markdown: the markers must be escaped
        + table([("<b>ε = 1</b> (one person)", "kept **as** typed -- here")], ["Fact", "Value"]))
    pdf = html_to_pdf(html)
    assert b"/URI" not in pdf
    path = tmp_path / "markup.pdf"
    path.write_bytes(pdf)
    text = " ".join(" ".join(pdf_pages_text(path)).split())
    assert "see [the site](https://example.org) **now**" in text and "[x](https://example.org) **y**" in text
    assert "a -- b __c__" in text and "kept **as** typed -- here" in text and "ε = 1 (one person)" in text
