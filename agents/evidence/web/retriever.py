"""The Selenium web retriever: headless Chromium driving a search or AI-answer page.

For each claim set it opens ``url_template`` with a directive query (the
claims, their date, the primary sources to check first), waits for the
answer element, and reads the answer's paragraphs, the cited links and any
dates next to them (:mod:`agents.evidence.web.extract` turns that into passages).

Browsers are expensive to start (seconds), so a small pool of sessions is
kept and reused; each query runs on a worker thread (Selenium blocks), never
on the event loop, under a per-query time limit. Whatever goes wrong on the
page (it never loads, it shows a captcha, the selectors match nothing, the
browser crashes) becomes a result with no passages and the reason, so one
bad page never stops the stream.

Chromium and chromedriver come from the system (Debian ``chromium`` and
``chromium-driver``); nothing is downloaded at run time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.errors import RetrievalError
from agents.evidence.retriever import RetrievalRequest, RetrievalResult
from agents.evidence.web.extract import PageData, directive_query, passages_from_page, problem_with, search_url

log = logging.getLogger("halluwatch.web")

CHROMIUM_ARGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
    "--window-size=1280,1600", "--lang=en-US",
)

# Reads the page in one round trip. Arguments: answer, paragraph, link and date selectors.
EXTRACT_JS = r"""
const [answerSel, paraSel, linkSel, dateSel] = arguments;
const clean = s => (s || '').replace(/\s+/g, ' ').trim();
const answer = document.querySelector(answerSel);
const links = Array.from(document.querySelectorAll(linkSel)).filter(a => a.href && a.href.startsWith('http'));
// A link's card: its largest ancestor that holds no other cited link.
function card(a) {
  let node = a;
  while (node.parentElement && node.parentElement !== document.body &&
         node.parentElement.querySelectorAll(linkSel).length <= 1 &&
         !(answer && node.parentElement === answer)) { node = node.parentElement; }
  return node;
}
function dateOf(node) {
  const d = node.matches && node.matches(dateSel) ? node : node.querySelector(dateSel);
  return d ? [clean(d.getAttribute('datetime') || d.textContent), clean(d.textContent)] : ['', ''];
}
let paragraphs = [];
if (answer) {
  let parts = Array.from(answer.querySelectorAll(paraSel)).filter(p => !p.querySelector(paraSel));
  if (!parts.length) parts = [answer];
  paragraphs = parts.map(p => ({text: clean(p.innerText), links: Array.from(p.querySelectorAll('a[href]')).map(a => a.href)}));
}
const sources = links.map(a => {
  const c = card(a);
  const title = clean(a.innerText || a.getAttribute('aria-label') || a.title);
  let snippet = clean(c.innerText);
  if (snippet.startsWith(title)) snippet = clean(snippet.slice(title.length));
  const [date, shown] = dateOf(c);
  if (shown && snippet.endsWith(shown)) snippet = clean(snippet.slice(0, -shown.length));
  return {href: a.href, title: title, snippet: c === a ? '' : snippet, date: date || clean(c.innerText)};
});
return {url: location.href, title: document.title, found: !!answer, paragraphs: paragraphs, sources: sources,
        body: clean(document.body ? document.body.innerText : '').slice(0, 4000)};
"""


# The answer's text length, -1 while it is absent, BLOCKED when the page shows a refusal marker.
WAIT_JS = r"""
const e = document.querySelector(arguments[0]);
if (e) return e.innerText.length;
const t = (document.body ? document.body.innerText : '').toLowerCase();
return arguments[1].some(m => t.includes(m)) ? -2 : -1;
"""
BLOCKED = -2


@dataclass(frozen=True)
class WebConfig:
    """What page to drive and how to read it. Defaults: Google's AI mode, as CAAFC used.

    Google changes its markup without notice: when the defaults stop matching, set
    the selectors (HALLUWATCH_WEB_*_SELECTOR) to what the page shows now.
    """

    url_template: str = "https://www.google.com/search?udm=50&hl=en&q={query}"
    answer_selector: str = '[data-container-id="main-col"], .mZJni, [data-subtree="aimc"]'
    paragraph_selector: str = "p, li"
    link_selector: str = '[data-container-id="main-col"] a[href^="http"], .mZJni a[href^="http"], [data-subtree="aimc"] a[href^="http"]'
    date_selector: str = 'time, [datetime], .YrbPuc, .MUxGbd span'
    blocked_markers: tuple[str, ...] = ("unusual traffic", "not a robot", "captcha", "access denied", "too many requests")
    timeout: float = 20.0  # seconds per query: page load plus waiting for the answer
    settle_seconds: float = 0.5  # AI answers stream in: wait until the text stops growing for this long
    browsers: int = 2
    reuse: bool = True  # False starts a fresh browser for every query (only for measuring what reuse saves)
    chromium_path: Path = Path("/usr/bin/chromium")
    chromedriver_path: Path = Path("/usr/bin/chromedriver")


@dataclass
class _Session:
    driver: Any
    profile: str


@dataclass
class BrowserPool:
    """Up to ``size`` Chromium sessions, started on demand and reused; a broken one is replaced."""

    config: WebConfig
    started: int = 0  # browsers started so far (the benchmark reports it)
    _idle: queue.LifoQueue[_Session] = field(default_factory=queue.LifoQueue)
    _all: list[_Session] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _slots: threading.Semaphore | None = None
    _closed: bool = False

    def __post_init__(self) -> None:
        self._slots = threading.Semaphore(max(1, self.config.browsers))

    def _start(self) -> _Session:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service

        for path, what in ((self.config.chromium_path, "chromium"), (self.config.chromedriver_path, "chromedriver")):
            if not Path(path).is_file():
                raise RetrievalError(
                    f"{what} not found at {path}: install the Debian packages chromium and chromium-driver,"
                    f" or set HALLUWATCH_{'CHROMIUM' if what == 'chromium' else 'CHROMEDRIVER'} to its path"
                )
        profile = tempfile.mkdtemp(prefix="halluwatch-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = str(self.config.chromium_path)
        for arg in CHROMIUM_ARGS:
            options.add_argument(arg)
        options.add_argument(f"--user-data-dir={profile}")
        driver = None
        try:
            # An explicit driver path: Selenium Manager would otherwise try to download one.
            driver = webdriver.Chrome(service=Service(executable_path=str(self.config.chromedriver_path)),
                                      options=options)
            driver.set_page_load_timeout(self.config.timeout)
            driver.set_script_timeout(self.config.timeout)
        except WebDriverException as exc:
            if driver is not None:
                with contextlib.suppress(WebDriverException):
                    driver.quit()
            shutil.rmtree(profile, ignore_errors=True)
            raise RetrievalError(f"Chromium did not start: {(exc.msg or str(exc)).splitlines()[0]}") from None
        session = _Session(driver, profile)
        with self._lock:
            self.started += 1
            self._all.append(session)
        return session

    def acquire(self) -> _Session:
        assert self._slots is not None
        self._slots.acquire()
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        try:
            return self._start()
        except BaseException:
            self._slots.release()
            raise

    def release(self, session: _Session, healthy: bool) -> None:
        assert self._slots is not None
        if healthy and self.config.reuse and not self._closed:
            self._idle.put(session)
        else:
            self._quit(session)
        self._slots.release()

    def _quit(self, session: _Session) -> None:
        from selenium.common.exceptions import WebDriverException

        with self._lock:
            if session in self._all:
                self._all.remove(session)
        try:
            session.driver.quit()
        except (WebDriverException, OSError) as exc:
            log.debug("browser did not quit cleanly: %s", exc)
        shutil.rmtree(session.profile, ignore_errors=True)

    def warm(self) -> None:
        """Start one browser now, so the first query does not pay for it; raises RetrievalError if it cannot."""
        self.release(self.acquire(), healthy=True)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            sessions = list(self._all)
        for session in sessions:
            self._quit(session)


class WebRetriever:
    """A :class:`~agents.stages.retrieve.Retriever` over a search / AI-answer page."""

    name = "web"

    def __init__(self, config: WebConfig, pool: BrowserPool | None = None):
        """``pool``: share browsers between retrievers that differ only in page and selectors."""
        self.config = config
        self.pool = pool or BrowserPool(config)
        self._executor = ThreadPoolExecutor(max_workers=max(1, config.browsers), thread_name_prefix="halluwatch-web")

    async def retrieve(self, request: RetrievalRequest) -> RetrievalResult:
        started = time.perf_counter()
        query = directive_query(request.claims, request.claim_date, request.sources)
        url = search_url(self.config.url_template, query)
        loop = asyncio.get_running_loop()
        hints = [f"{s.kind} {s.where}" for s in request.sources]
        # The browser enforces the per-query limit itself; this outer guard covers a wedged driver too.
        try:
            page, problem = await asyncio.wait_for(
                loop.run_in_executor(self._executor, self.fetch, url), self.config.timeout + 15.0
            )
        except TimeoutError:
            page, problem = None, f"no answer from the browser within {self.config.timeout + 15.0:.0f}s"
        passages = passages_from_page(page, request.today, self.name, hints) if page and not problem else []
        if page is not None and not problem and not passages:
            problem = "the answer had no text and no cited links"
        return RetrievalResult(self.name, tuple(passages), problem, time.perf_counter() - started)

    def fetch(self, url: str) -> tuple[PageData | None, str]:
        """Blocking: load ``url`` in a pooled browser; (page, "") or (page or None, why there is no evidence)."""
        from selenium.common.exceptions import TimeoutException, WebDriverException

        try:
            session = self.pool.acquire()
        except RetrievalError as exc:
            return None, str(exc)
        healthy = True
        try:
            deadline = time.monotonic() + self.config.timeout
            try:
                session.driver.get(url)
            except TimeoutException:
                healthy = self._stop_loading(session)
                return None, f"the page did not load within {self.config.timeout:.0f}s ({url[:120]})"
            self._wait_for_answer(session.driver, deadline)
            page = PageData.from_script(session.driver.execute_script(
                EXTRACT_JS, self.config.answer_selector, self.config.paragraph_selector,
                self.config.link_selector, self.config.date_selector))
            return page, problem_with(page, self.config.answer_selector, self.config.blocked_markers)
        except WebDriverException as exc:
            healthy = False
            return None, f"the browser failed on the page: {(exc.msg or type(exc).__name__).splitlines()[0]}"
        finally:
            self.pool.release(session, healthy)

    def _wait_for_answer(self, driver: Any, deadline: float) -> None:
        """Until the answer element's text stops growing for ``settle_seconds``, or the deadline."""
        last, stable_since = -3, time.monotonic()
        markers = [m.lower() for m in self.config.blocked_markers]
        while time.monotonic() < deadline:
            length = driver.execute_script(WAIT_JS, self.config.answer_selector, markers)
            if length == BLOCKED:
                return  # a captcha or refusal page: no answer is coming
            now = time.monotonic()
            if length != last:
                last, stable_since = length, now
            elif length > 0 and now - stable_since >= self.config.settle_seconds:
                return
            time.sleep(0.1)

    def _stop_loading(self, session: _Session) -> bool:
        """After a load timeout: stop the navigation so the session can be reused; False if it cannot."""
        from selenium.common.exceptions import WebDriverException

        try:
            session.driver.execute_script("window.stop();")
            session.driver.get("about:blank")
            return True
        except WebDriverException:
            return False

    def close(self) -> None:
        self.pool.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
