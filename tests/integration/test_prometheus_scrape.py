"""A real Prometheus (the Debian binary) scrapes a real worker on the embedded broker.

One conversation (a user turn and one assistant turn with a planted error) and
one malformed message are replayed; the counts Prometheus stored must match
what the worker did, and the alert rules must load and the dead-letter alert fire.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from schemas import Label, Role, ids
from stream.app import bootstrap_servers, topic_name
from stream.broker import free_port
from stream.replay import publish, wait_for
from tests.integration.test_stream import WAIT, broker, collector, start_worker, turns, workers  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docker" / "prometheus" / "rules.yml"


def http_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return orjson.loads(response.read())


class Prometheus:
    def __init__(self, url: str):
        self.url = url

    def query(self, expr: str) -> list[dict]:
        body = http_json(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        assert body["status"] == "success", body
        return body["data"]["result"]

    def value(self, expr: str) -> float | None:
        result = self.query(expr)
        assert len(result) <= 1, f"{expr} matched {len(result)} series: {result}"
        return float(result[0]["value"][1]) if result else None


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[Prometheus, Path]]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is not installed: apt-get install prometheus (CI does this in .ci/run)")
    port = free_port()
    config = tmp_path / "prometheus.yml"
    process: subprocess.Popen[bytes] | None = None

    def start(target_port: int) -> Prometheus:
        nonlocal process
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: ['{RULES}']\n"
            "scrape_configs:\n"
            f"  - job_name: halluwatch\n    static_configs: [{{targets: ['127.0.0.1:{target_port}']}}]\n"
        )
        process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("wb"),
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert process.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
            try:
                urllib.request.urlopen(f"{url}/-/ready", timeout=1).close()
                return Prometheus(url)
            except OSError:
                time.sleep(0.3)
        raise AssertionError("prometheus did not become ready in 30 s")

    yield start, tmp_path  # type: ignore[misc]
    if process is not None and process.poll() is None:
        process.terminate()
        process.wait(timeout=20)


async def eventually(check, timeout: float = 30.0) -> None:
    """Scrapes and rule evaluations run every second: retry the assertions until they hold."""
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        try:
            check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1.0)


async def test_prometheus_scrapes_the_worker_and_counts_match(broker, collector, workers, prometheus) -> None:  # noqa: F811
    from aiokafka import AIOKafkaProducer

    settings, c = collector
    start_prometheus, _ = prometheus
    port = free_port()
    worker = workers(settings, HALLUWATCH_METRICS_PORT=str(port))
    prom = start_prometheus(port)
    bootstrap = bootstrap_servers(broker.url)

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(topic_name(settings, "turns"), key=b"conv-prom", value=b"{not json")
    finally:
        await producer.stop()
    conversation = turns("conv-prom", (Role.USER, "Where is the Eiffel Tower?"),
                         (Role.ASSISTANT, "The Eiffel Tower is in Berlin."))
    sent = await publish(conversation, bootstrap, settings)
    assert await wait_for(c, sent, WAIT, alive=lambda: worker.poll() is None), "no verdict: is the worker alive?"
    verdict = c.collected.verdicts[ids.verdict_id("conv-prom", "T1")]
    claims = len(verdict.evidence.claimset.claims)
    alerts = 1 if verdict.label is Label.FALSE else 0
    corrections = 0 if verdict.label is Label.TRUE else 1
    assert claims >= 1

    def counts_match() -> None:
        assert prom.value('up{job="halluwatch"}') == 1
        assert prom.value('halluwatch_turns_total{role="user"}') == 1
        assert prom.value('halluwatch_turns_total{role="assistant"}') == 1
        assert prom.value("halluwatch_claims_total") == claims
        assert prom.value("sum(halluwatch_claim_verdicts_total)") == claims
        assert prom.value(f'halluwatch_turn_verdicts_total{{label="{verdict.label.value}", bot="test-bot"}}') == 1
        assert prom.value("sum(halluwatch_turn_verdicts_total)") == 1
        # Stage latency covers processed messages; the malformed one is counted as a dead letter instead.
        for stage, expected in (("segment", 2), ("retrieve", 1), ("verify", 1), ("justify", 1)):
            assert prom.value(f'halluwatch_stage_duration_seconds_count{{stage="{stage}"}}') == expected, stage
        assert prom.value('halluwatch_dead_letters_total{stage="segment", reason="NotJSONError"}') == 1
        assert prom.value('halluwatch_end_to_end_latency_seconds_count{output="verdict"}') == 1
        assert (prom.value("sum(halluwatch_alerts_total)") or 0) == alerts
        assert (prom.value("sum(halluwatch_corrections_total)") or 0) == corrections
        for stage in ("segment", "verify"):
            assert prom.value(f'halluwatch_model_tokens_total{{stage="{stage}", phase="generate"}}') > 0
            assert prom.value(f'halluwatch_model_seconds_total{{stage="{stage}", phase="prompt"}}') > 0
        lag = prom.query("halluwatch_consumer_lag_messages")
        assert {s["metric"]["topic"] for s in lag} == {"turns", "claimsets", "evidence", "verdicts"}
        assert {s["metric"]["partition"] for s in lag} == {"0", "1"}  # the test's topics have 2 partitions
        info = prom.query("halluwatch_build_info")
        assert len(info) == 1 and info[0]["metric"]["model"].startswith("gemma3-270m")

    await eventually(counts_match)

    rules = http_json(f"{prom.url}/api/v1/rules")["data"]["groups"]
    assert {g["name"] for g in rules} == {"halluwatch-recording", "halluwatch-alerts"}
    assert all(r["health"] == "ok" for g in rules for r in g["rules"]), rules

    def dead_letter_alert_fires() -> None:
        firing = http_json(f"{prom.url}/api/v1/alerts")["data"]["alerts"]
        assert any(a["labels"]["alertname"] == "HalluwatchDeadLetters" and a["labels"]["reason"] == "NotJSONError"
                   and a["state"] == "firing" for a in firing), firing

    await eventually(dead_letter_alert_fires)
