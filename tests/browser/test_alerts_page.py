"""The live alerts page of a real worker (embedded broker), in real headless Chromium.

Alerts are published to the alerts topic while the page is open: they must
appear without a reload, newest first, with everything a reader needs, and the
bot and severity filters must narrow the list.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from schemas import Alert, Citation, ErrorFix, Label, Severity, encode, ids
from stream.app import bootstrap_servers, topic_name
from stream.broker import free_port
from stream.commands.demo import CONVERSATIONS
from stream.replay import publish, read_replay, wait_for
from tests.integration.test_stream import WAIT, broker, collector, workers  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[2]


def an_alert(n: int, bot: str, severity: Severity, raised_at: float) -> Alert:
    source = Citation(passage_id=f"p{n}", url=f"https://example.org/source-{n}", title=f"Source {n}",
                      published_at="2023-05-01")
    fix = ErrorFix(claim_id=f"claim-{n}", claim_text=f"Planted false claim number {n}.", label=Label.FALSE,
                   correction=f"The corrected fact number {n}.", citations=(source,))
    return Alert(alert_id=ids.alert_id(f"conv-{n}", "T1"), conversation_id=f"conv-{n}", turn_id="T1", bot=bot,
                 severity=severity, false_claims=(fix,), corrected_text=f"Corrected turn {n}.", sources=(source,),
                 latency_seconds=4.4, raised_at=raised_at)


async def send_alerts(bootstrap: str, topic: str, *alerts: Alert) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for alert in alerts:
            await producer.send_and_wait(topic, key=alert.conversation_id.encode(), value=encode(alert))
    finally:
        await producer.stop()


def wait_http(url: str, alive: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert alive(), "the worker exited"
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer in {timeout:.0f}s")


async def until(driver: Any, condition: Callable[[Any], Any], timeout: float = 30.0) -> Any:
    """Poll the page off the event loop (Selenium blocks) until ``condition`` is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        found = await asyncio.to_thread(condition, driver)
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"page condition not met in {timeout:.0f}s")
        await asyncio.sleep(0.3)


def shown_ids(driver: Any) -> list[str]:
    # Read in one script: the page may redraw between two WebDriver calls, making found elements stale.
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#alerts > li')).map((li) => li.dataset.alertId);"
    )


async def open_page(driver: Any, url: str) -> None:
    await asyncio.to_thread(driver.get, url)
    await until(driver, lambda d: "live" in d.find_element("id", "status").text)


async def test_published_alert_appears_live_and_filters_work(broker, collector, workers, chrome) -> None:  # noqa: F811
    from selenium.webdriver.support.ui import Select

    settings, _ = collector
    port = free_port()
    worker = workers(settings, HALLUWATCH_METRICS_PORT=str(port))
    page = f"http://127.0.0.1:{port}/alerts"
    await asyncio.to_thread(wait_http, page, lambda: worker.poll() is None)
    await open_page(chrome, page)
    assert shown_ids(chrome) == []
    await asyncio.to_thread(chrome.execute_script, "window.__notReloaded = true;")

    bootstrap, topic = bootstrap_servers(broker.url), topic_name(settings, "alerts")
    first = an_alert(1, "travel-bot", Severity.HIGH, time.time())
    await send_alerts(bootstrap, topic, first)
    await until(chrome, lambda d: shown_ids(d) == [first.alert_id])
    card = await asyncio.to_thread(chrome.find_element, "css selector", f'li[data-alert-id="{first.alert_id}"]')
    text = card.text
    for expected in ("HIGH", "travel-bot", "conversation conv-1", "turn T1", "Planted false claim number 1.",
                     "The corrected fact number 1.", "Corrected turn 1.", "Source 1", "published 2023-05-01",
                     "latency 4.4 s"):
        assert expected in text, f"{expected!r} not on the card: {text}"
    link = card.find_element("css selector", ".sources a")
    assert link.get_attribute("href") == "https://example.org/source-1"

    second = an_alert(2, "geo-bot", Severity.LOW, time.time() + 1)
    await send_alerts(bootstrap, topic, second)
    await until(chrome, lambda d: shown_ids(d) == [second.alert_id, first.alert_id])  # newest first
    assert await asyncio.to_thread(chrome.execute_script, "return window.__notReloaded === true;")

    severity = Select(chrome.find_element("id", "severity"))
    await asyncio.to_thread(severity.select_by_value, "high")
    await until(chrome, lambda d: shown_ids(d) == [first.alert_id])
    await asyncio.to_thread(severity.select_by_value, "")
    await until(chrome, lambda d: len(Select(d.find_element("id", "bot")).options) == 3)  # all, geo-bot, travel-bot
    await asyncio.to_thread(Select(chrome.find_element("id", "bot")).select_by_value, "geo-bot")
    await until(chrome, lambda d: shown_ids(d) == [second.alert_id])
    assert chrome.current_url.endswith("/alerts?bot=geo-bot")
    # While filtered, a new alert of another bot stays hidden and one of the chosen bot shows up.
    third, fourth = an_alert(3, "travel-bot", Severity.HIGH, time.time() + 2), an_alert(4, "geo-bot", Severity.MEDIUM, time.time() + 3)
    await send_alerts(bootstrap, topic, third, fourth)
    await until(chrome, lambda d: shown_ids(d) == [fourth.alert_id, second.alert_id])
    assert await asyncio.to_thread(chrome.execute_script, "return window.__notReloaded === true;")


async def test_alert_text_is_shown_as_text_not_markup(broker, collector, workers, chrome) -> None:  # noqa: F811
    settings, _ = collector
    port = free_port()
    worker = workers(settings, HALLUWATCH_METRICS_PORT=str(port))
    page = f"http://127.0.0.1:{port}/alerts"
    await asyncio.to_thread(wait_http, page, lambda: worker.poll() is None)
    await open_page(chrome, page)
    alert = an_alert(5, "bot", Severity.HIGH, time.time())
    evil = replace(alert.false_claims[0], claim_text='<img src=x onerror="window.__pwned=1">Paris is in Spain.')
    bad_source = replace(alert.sources[0], url="javascript:window.__pwned=2")
    alert = replace(alert, false_claims=(evil,), sources=(bad_source,))
    await send_alerts(bootstrap_servers(broker.url), topic_name(settings, "alerts"), alert)
    await until(chrome, lambda d: shown_ids(d) == [alert.alert_id])
    card = chrome.find_element("css selector", f'li[data-alert-id="{alert.alert_id}"]')
    assert '<img src=x onerror="window.__pwned=1">Paris is in Spain.' in card.text
    assert card.find_elements("css selector", "img") == [] and card.find_elements("css selector", ".sources a") == []
    assert chrome.execute_script("return window.__pwned === undefined;")


async def test_demo_alerts_on_the_page(broker, collector, workers, chrome, tmp_path) -> None:  # noqa: F811
    """The bundled demo conversations through a real worker and model; the page fills as alerts come.

    Saves a screenshot to $HALLUWATCH_SCREENSHOT (docs/alerts-page.png in the repository was made so).
    """
    settings, c = collector
    port = free_port()
    worker = workers(settings, HALLUWATCH_METRICS_PORT=str(port))
    page = f"http://127.0.0.1:{port}/alerts"
    await asyncio.to_thread(wait_http, page, lambda: worker.poll() is None)
    await open_page(chrome, page)
    sent = await publish(read_replay(CONVERSATIONS).turns, bootstrap_servers(broker.url), settings)
    assert await wait_for(c, sent, WAIT * 2, alive=lambda: worker.poll() is None)
    raised = sorted(c.collected.alerts.values(), key=lambda a: -a.raised_at)
    assert raised, "the demo raised no alert"
    await until(chrome, lambda d: shown_ids(d) == [a.alert_id for a in raised])
    out = Path(os.environ.get("HALLUWATCH_SCREENSHOT") or tmp_path / "alerts-page.png")
    await asyncio.to_thread(chrome.set_window_size, 1280, 400 + 330 * len(raised))
    await asyncio.sleep(2.5)  # the highlight of fresh cards fades out
    assert await asyncio.to_thread(chrome.save_screenshot, str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
