"""The Selenium web retriever in real headless Chromium against pages served by a local HTTP server."""

from __future__ import annotations

import time

from agents.evidence.retriever import RetrievalRequest
from agents.evidence.web.retriever import WebRetriever
from schemas import Claim, PrimarySource
from tests.browser.conftest import local_config

TODAY = "2026-12-03"
REQUEST = RetrievalRequest(
    claims=(Claim(claim_id="c1", index=0, text="Mount Everest is 8,848 metres high."),),
    claim_date="2019-05-01",
    sources=(PrimarySource(kind="national survey department", where="Survey Department of Nepal", reason="official"),),
    today=TODAY,
)


async def test_answer_page_gives_dated_passages_with_cited_links(page_server, browser_pool) -> None:
    retriever = WebRetriever(local_config(page_server), pool=browser_pool)
    result = await retriever.retrieve(REQUEST)
    assert result.reason == ""
    by_text = {p.text: p for p in result.passages}
    # Answer paragraphs take the URL and date of the source they cite.
    new = by_text["In December 2020 Nepal and China jointly announced a new official height of Mount Everest: 8,848.86 metres. [2]"]
    assert (new.url, new.published_at, new.primary) == ("https://www.dos.gov.np/everest-height", "2020-12-08", True)
    old = by_text["Mount Everest was long given as 8,848 metres, a figure surveyed in 1955. [1]"]
    assert (old.url, old.published_at, old.primary) == ("https://www.example-atlas.com/everest-1955", "2005-03-01", False)
    # A paragraph citing nothing keeps the page's URL and an unknown date.
    loose = by_text["No other survey has changed the figure since."]
    assert loose.published_at is None and loose.url.startswith(f"http://127.0.0.1:{page_server.port}/answer?q=")
    # Source cards: snippet text, title, date (relative dates counted back from the retrieval date).
    cards = {p.url: p for p in result.passages if p.title != "AI answer" and p.text in {
        "The survey of India measured 8,848 m.", "Nepal and China announce 8,848.86 m.", "Climbers react."}}
    assert {u: (p.title, p.published_at) for u, p in cards.items()} == {
        "https://www.example-atlas.com/everest-1955": ("World atlas: Everest", "2005-03-01"),
        "https://www.dos.gov.np/everest-height": ("Joint announcement of the height of Mount Everest", "2020-12-08"),
        "https://news.example.org/everest": ("Everest news", "2026-11-30"),
    }
    assert all(p.retriever == "web" and p.retrieved_at == TODAY for p in result.passages)
    # The directive query carried the claims, their date and the primary sources.
    query = page_server.queries[-1]
    assert "Mount Everest is 8,848 metres high." in query and "2019-05-01" in query
    assert "Survey Department of Nepal" in query


async def test_page_that_never_loads_reports_the_reason_and_the_browser_is_reused(page_server, browser_pool) -> None:
    hanging = WebRetriever(local_config(page_server, "/hang", timeout=3.0), pool=browser_pool)
    started = time.monotonic()
    result = await hanging.retrieve(REQUEST)
    assert result.passages == ()
    assert "did not load within 3s" in result.reason
    assert time.monotonic() - started < 15
    # The same browser still answers the next query.
    before = browser_pool.started
    again = await WebRetriever(local_config(page_server), pool=browser_pool).retrieve(REQUEST)
    assert again.passages and again.reason == ""
    assert browser_pool.started == before


async def test_page_without_the_expected_elements_reports_the_selector(page_server, browser_pool) -> None:
    result = await WebRetriever(local_config(page_server, "/empty", timeout=2.0), pool=browser_pool).retrieve(REQUEST)
    assert result.passages == ()
    assert result.reason.startswith("no element matches the answer selector '#answer'")


async def test_blocked_page_is_reported_as_blocked_without_waiting_out_the_timeout(page_server, browser_pool) -> None:
    started = time.monotonic()
    result = await WebRetriever(local_config(page_server, "/blocked", timeout=10.0), pool=browser_pool).retrieve(REQUEST)
    assert result.passages == ()
    assert "blocked" in result.reason and "unusual traffic" in result.reason
    assert time.monotonic() - started < 8
