"""The example AI-answer site on a local port, and one shared headless Chromium for the browser tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents import example_pages
from agents.example_pages import ExamplePages
from agents.web_retriever import BrowserPool, WebConfig


@pytest.fixture(scope="session")
def page_server() -> Iterator[ExamplePages]:
    with ExamplePages() as site:
        yield site


def local_config(site: ExamplePages, path: str = "/answer", **changes: object) -> WebConfig:
    values: dict[str, object] = dict(
        url_template=site.url_template(path), answer_selector=example_pages.ANSWER_SELECTOR,
        paragraph_selector=example_pages.PARAGRAPH_SELECTOR, link_selector=example_pages.LINK_SELECTOR,
        date_selector=example_pages.DATE_SELECTOR, timeout=4.0, settle_seconds=0.3, browsers=1,
    )
    values.update(changes)
    return WebConfig(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def browser_pool(page_server: ExamplePages) -> Iterator[BrowserPool]:
    """One Chromium for the whole session: starting one costs seconds on a small machine."""
    pool = BrowserPool(local_config(page_server))
    yield pool
    pool.close()
