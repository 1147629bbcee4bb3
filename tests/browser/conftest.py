"""Real headless Chromium (Debian chromium + chromium-driver) driven by Selenium; nothing is downloaded.

Fixtures: the example AI-answer site on a local port with one shared browser pool (web retriever
tests), and a plain Chromium driver (alerts page tests), both started with the retriever's flags.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from agents.evidence.web.retriever import CHROMIUM_ARGS, BrowserPool, WebConfig
from agents.testing import example_site
from agents.testing.example_site import ExamplePages

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture(scope="session")
def page_server() -> Iterator[ExamplePages]:
    with ExamplePages() as site:
        yield site


def local_config(site: ExamplePages, path: str = "/answer", **changes: object) -> WebConfig:
    values: dict[str, object] = dict(
        url_template=site.url_template(path), answer_selector=example_site.ANSWER_SELECTOR,
        paragraph_selector=example_site.PARAGRAPH_SELECTOR, link_selector=example_site.LINK_SELECTOR,
        date_selector=example_site.DATE_SELECTOR, timeout=4.0, settle_seconds=0.3, browsers=1,
    )
    values.update(changes)
    return WebConfig(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def browser_pool(page_server: ExamplePages) -> Iterator[BrowserPool]:
    """One Chromium for the whole session: starting one costs seconds on a small machine."""
    pool = BrowserPool(local_config(page_server))
    yield pool
    pool.close()


@pytest.fixture
def chrome() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if shutil.which(path) is None:
            pytest.fail(f"{path} is missing: apt-get install {package} (CI does this in .ci/run)")
    profile = tempfile.mkdtemp(prefix="halluwatch-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_ARGS, f"--user-data-dir={profile}", "--window-size=1280,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
