"""Re-take docs/report-demo.png: the demo's review in headless Chromium (Debian
`chromium` + `chromium-driver`, driven by selenium from the test extras).

    cd fixtures/demo && deadline-audit report . --no-cache -o /tmp/review.html
    python docs/screenshot.py /tmp/review.html docs/report-demo.png '#supervision'
"""

import sys
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

page, target = sys.argv[1], sys.argv[2]
anchor = sys.argv[3] if len(sys.argv) > 3 else None
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tempfile.mkdtemp()}", "--window-size=1400,1250"):
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    driver.get("file://" + page)
    if anchor:
        driver.execute_script("window.scrollTo(0, document.querySelector(arguments[0]).offsetTop - 8)", anchor)
    driver.save_screenshot(target)
finally:
    driver.quit()
