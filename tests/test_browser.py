"""The HTML report in a real browser: every page of `docs/results` (the summary, P1 … P5, the runs) loads in headless
Chromium and every image on it renders (no broken image), through `tests/browser_check.py`. Chromium comes from the
distribution (`apt-get install -y chromium`, which `.ci/run` does); without it this test is skipped, saying so."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import browser_check  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["REPORT", "P1", "P2", "P3", "P4", "P5", "runs"]


@pytest.fixture(scope="module")
def browser():
    executable = browser_check.find_chromium()
    if executable is None:
        pytest.skip("chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
    opened = browser_check.Browser(executable)
    yield opened
    opened.close()


@pytest.mark.parametrize("page", PAGES)
def test_report_page_loads_and_every_image_renders(browser, page, tmp_path):
    state = browser_check.check_page(browser, ROOT / "docs" / "results" / f"{page}.html", tmp_path / "shot.png")
    assert state["ready"] == "complete" and state["title"].startswith("hf_icl report")
    assert state["tables"] >= 1
    broken = [src for src, _, width in state["images"] if width == 0]
    assert not broken, f"{page}.html: broken images {broken}"
    assert (tmp_path / "shot.png").stat().st_size > 10_000  # a real picture of the page


def test_the_check_sees_a_broken_image(browser, tmp_path):
    page = tmp_path / "broken.html"
    (tmp_path / "fine.png").write_bytes((ROOT / "docs" / "results" / "report_figures" / "p1_fig2.png").read_bytes())
    page.write_text("<html><head><title>t</title></head><body><table></table>"
                    "<img src='fine.png'><img src='missing.png'></body></html>")  # fmt: skip
    state = browser_check.check_page(browser, page)
    assert [(src, width > 0) for src, _, width in state["images"]] == [("fine.png", True), ("missing.png", False)]


def test_the_committed_screenshot_is_a_picture_of_a_report_page():
    shot = ROOT / "docs" / "results" / "report_screenshot.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
