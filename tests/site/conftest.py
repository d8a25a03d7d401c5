"""The site's browser fixtures: headless Chromium with the network cut, and a page that checks,
after each test, that no request left the site and no script failed.

Without Chromium (Debian packages chromium and chromium-driver) the browser tests are skipped,
except under CI (CI=true), where a missing browser fails the run.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver")
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but headless Chromium is missing (apt-get install chromium chromium-driver)")
        pytest.skip("headless Chromium is missing (Debian packages chromium and chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox",  # no-sandbox: CI runs as root
                "--disable-gpu", "--window-size=1280,2000",
                # The network cut: no name resolves but 127.0.0.1, and anything else goes to a dead proxy.
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    chrome = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver))
    try:
        yield chrome
    finally:
        chrome.quit()


@pytest.fixture
def page(browser: Any, site_url: str) -> Iterator[Any]:
    """The browser; afterwards, every request it made was to the site, and no script failed."""
    browser.get_log("performance"), browser.get_log("browser")  # start from empty logs
    yield browser
    requested = [json.loads(entry["message"])["message"] for entry in browser.get_log("performance")]
    urls = [m["params"]["request"]["url"] for m in requested if m["method"] == "Network.requestWillBeSent"]
    assert urls, "the performance log recorded no request"
    # data: URLs are inline images in the theme's CSS, not requests to anywhere.
    assert [u for u in urls if not u.startswith((site_url, "data:"))] == []
    assert [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
