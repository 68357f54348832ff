"""The demo review opened in headless Chromium (Debian `chromium` + `chromium-driver`,
driven by selenium): it renders, the SVG is there, the browser logs no error, and the
inventory's filter works. Skipped, saying why, only where no browser is installed."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from analysis_support import FIXTURES
from da_cli_support import run_cli

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1600")


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not path.is_file():
            return f"no browser: {path} is missing (apt-get install {package}; .ci/run installs it)"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="deadline-audit-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_review_renders_in_chromium(browser, tmp_path, monkeypatch):
    from selenium.webdriver.common.by import By

    monkeypatch.chdir(FIXTURES / "demo")
    out = tmp_path / "review.html"
    result = run_cli("report", ".", "--no-cache", "-o", str(out))
    assert result.exit_code == 0, result.output

    browser.get(out.resolve().as_uri())
    shot = tmp_path / "review.png"
    assert browser.save_screenshot(str(shot))
    assert _not_blank(browser, shot)
    assert browser.find_element(By.CSS_SELECTOR, "h1").text.startswith("Timeout architecture review")
    if shutil.which("dot"):
        svgs = browser.find_elements(By.CSS_SELECTOR, "#graph svg")
        assert len(svgs) == 2 and svgs[0].size["width"] > 100 and svgs[0].size["height"] > 100
    else:
        assert browser.find_elements(By.CSS_SELECTOR, "#graph pre.mermaid")

    # the script shows the controls, filters and counts the inventory
    controls = browser.find_element(By.ID, "inventory-controls")
    assert controls.is_displayed()
    browser.find_element(By.ID, "inventory-filter").send_keys("MODEL_TIMEOUT")
    visible = [r for r in browser.find_elements(By.CSS_SELECTOR, "#inventory-table tbody tr") if r.is_displayed()]
    assert visible and all("MODEL_TIMEOUT" in r.text for r in visible)
    assert browser.find_element(By.ID, "inventory-count").text.endswith(f"of {_rows(browser)} sites")

    # sorting: a click on "Effective" orders the rows by seconds, unresolved last
    browser.find_element(By.ID, "inventory-filter").clear()
    browser.execute_script("document.getElementById('inventory-filter').dispatchEvent(new Event('input'))")
    header = next(th for th in browser.find_elements(By.CSS_SELECTOR, "#inventory-table thead th") if th.text == "Effective")
    header.click()
    values = browser.execute_script(
        "return Array.from(document.querySelectorAll('#inventory-table tbody tr'))"
        ".map(r => r.cells[4].dataset.value)")
    numbers = [float(v) for v in values if v]
    assert numbers == sorted(numbers) and numbers[0] == 10.0
    assert all(v == "" for v in values[len(numbers):])  # unresolved values sort last
    assert header.get_attribute("aria-sort") == "ascending"

    severe = [entry for entry in browser.get_log("browser") if entry.get("level") == "SEVERE"]
    assert severe == []


def _rows(browser) -> int:
    from selenium.webdriver.common.by import By

    return len(browser.find_elements(By.CSS_SELECTOR, "#inventory-table tbody tr"))


def _not_blank(browser, shot: Path) -> bool:
    """The screenshot is a real PNG with more than one colour (decoded by the browser
    itself: no imaging library needed)."""
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    colours = browser.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const img = new Image();
        img.onload = () => {
          const c = document.createElement('canvas'); c.width = 200; c.height = 200;
          const g = c.getContext('2d'); g.drawImage(img, 0, 0, 200, 200);
          const px = g.getImageData(0, 0, 200, 200).data; const seen = new Set();
          for (let i = 0; i < px.length; i += 4) seen.add(px[i] + ',' + px[i+1] + ',' + px[i+2]);
          done(seen.size);
        };
        img.onerror = () => done(0);
        img.src = 'data:image/png;base64,' + arguments[0];
        """,
        __import__("base64").b64encode(data).decode(),
    )
    return colours > 10
