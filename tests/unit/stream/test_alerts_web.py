"""The alert ring buffer and the worker's HTTP routes (served by a real aiohttp server on a free port)."""

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from schemas import Severity
from stream.alert_feed import AlertBuffer, AlertQuery
from stream.metrics import PipelineMetrics
from stream.stages import make_alert
from stream.web import make_web_app
from tests.support.records import sample_correction, sample_turn_verdict


def alert(n: int, bot: str = "bot", severity: Severity = Severity.HIGH, raised_at: float | None = None):
    a = make_alert(sample_turn_verdict(), sample_correction(), now=1000.0 + n)
    return replace(a, alert_id=f"a{n}", turn_id=f"t{n}", bot=bot, severity=severity,
                   raised_at=raised_at if raised_at is not None else 1000.0 + n)


def test_buffer_is_newest_first_bounded_and_ignores_redeliveries() -> None:
    buffer = AlertBuffer(capacity=3)
    for n in range(5):
        assert buffer.add(alert(n))
    assert not buffer.add(alert(4))
    assert [a.alert_id for a in buffer.query(AlertQuery())] == ["a4", "a3", "a2"]
    assert buffer.add(alert(0))  # fell out of the ring: new to the page again


def test_buffer_filters() -> None:
    buffer = AlertBuffer()
    buffer.add(alert(1, bot="travel", severity=Severity.LOW))
    buffer.add(alert(2, bot="geo", severity=Severity.HIGH))
    buffer.add(alert(3, bot="travel", severity=Severity.HIGH))
    assert [a.alert_id for a in buffer.query(AlertQuery(bot="travel"))] == ["a3", "a1"]
    assert [a.alert_id for a in buffer.query(AlertQuery(severity="high"))] == ["a3", "a2"]
    assert [a.alert_id for a in buffer.query(AlertQuery(bot="travel", severity="low"))] == ["a1"]
    assert buffer.bots() == ["geo", "travel"]


@pytest.fixture
async def client() -> AsyncIterator[tuple[TestClient, AlertBuffer, PipelineMetrics]]:
    buffer = AlertBuffer()
    metrics = PipelineMetrics(CollectorRegistry())
    c = TestClient(TestServer(make_web_app(buffer, metrics.registry)))
    await c.start_server()
    yield c, buffer, metrics
    await c.close()


async def test_api_alerts_json(client) -> None:
    c, buffer, _ = client
    buffer.add(alert(1, bot="travel"))
    buffer.add(alert(2, bot="geo", severity=Severity.MEDIUM))
    body = await (await c.get("/api/alerts")).json()
    assert [a["alert_id"] for a in body["alerts"]] == ["a2", "a1"]
    first = body["alerts"][1]
    assert first["false_claims"][0]["claim_text"] == "The tower is in Berlin."
    assert first["sources"][0]["published_at"] == "2023-05-01" and first["latency_seconds"] >= 0
    assert body["bots"] == ["geo", "travel"]
    body = await (await c.get("/api/alerts?severity=medium")).json()
    assert [a["alert_id"] for a in body["alerts"]] == ["a2"]


async def test_api_rejects_bad_filters_with_the_accepted_values(client) -> None:
    c, _, _ = client
    response = await c.get("/api/alerts?severity=urgent")
    assert response.status == 400 and "low, medium, high" in await response.text()
    response = await c.get("/api/alerts?limit=many")
    assert response.status == 400 and "whole number" in await response.text()


async def test_metrics_and_page_routes(client) -> None:
    c, _, metrics = client
    metrics.dead_letter("segment", "NotJSONError")
    response = await c.get("/metrics")
    assert response.headers["Content-Type"].startswith("text/plain")
    assert 'halluwatch_dead_letters_total{reason="NotJSONError",stage="segment"} 1.0' in await response.text()
    page = await c.get("/alerts")
    assert page.status == 200 and "/static/alerts.js" in await page.text()
    assert (await c.get("/static/alerts.js")).status == 200


async def test_no_metrics_route_when_metrics_are_off() -> None:
    c = TestClient(TestServer(make_web_app(AlertBuffer(), None)))
    await c.start_server()
    try:
        assert (await c.get("/metrics")).status == 404
        assert (await c.get("/api/alerts")).status == 200
    finally:
        await c.close()
