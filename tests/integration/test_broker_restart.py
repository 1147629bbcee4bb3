"""Broker faults: the embedded broker is killed -9 and started again on its port while a worker runs.

The embedded broker keeps everything in memory, so it comes back with no
topics, no consumer group and logs that start at offset 0 again. The worker
reports the outage (a log line and the ``broker_up`` / ``broker_outages_total``
metrics), restarts in place (same process id), waits for the broker while still
serving its metrics, and verifies the turns published after the broker is back.
The broker is killed mid-stream, with turns in flight at every stage: the case
that stalled the worker for minutes before it restarted in place
(``docs/research/broker-restart/``). A worker started before its broker waits
for it the same way instead of exiting.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from stream.app import bootstrap_servers
from stream.broker import EmbeddedBroker, free_port
from stream.commands.bench_stream import synthetic_turns, worker_process
from stream.process import stat_fields, stop
from stream.replay import Collector, expected_verdict_ids, publish
from stream.settings import Settings
from stream.topic_admin import ensure_topics


def scrape(port: int) -> str | None:
    """The worker's /metrics text, or None while its web server is not up."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return response.read().decode()
    except OSError:
        return None


def metric(port: int, name: str) -> float | None:
    """One unlabelled sample from the worker's /metrics, or None while its web server is not up."""
    for line in (scrape(port) or "").splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


async def until(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.5)


async def published_and_verified(settings: Settings, name: str, alive) -> tuple[int, int, float]:  # type: ignore[no-untyped-def]
    """Publish 10 conversations; (verdicts expected, verdicts seen, seconds to the first verdict)."""
    bootstrap = bootstrap_servers(settings.broker_url or "")
    collector = Collector(bootstrap, settings)
    await collector.start()
    try:
        started = time.monotonic()
        sent = await publish(synthetic_turns(10, 4, name=name), bootstrap, settings)
        expected = expected_verdict_ids(sent)
        first = None
        deadline = time.monotonic() + 120
        while len(set(expected) & set(collector.collected.verdicts)) < len(expected) and time.monotonic() < deadline:
            assert alive(), "the worker exited"
            await collector.poll()
            if first is None and collector.collected.verdicts:
                first = time.monotonic() - started
        assert not collector.collected.dead_letters, "valid turns were dead-lettered"
        return len(expected), len(set(expected) & set(collector.collected.verdicts)), first or 0.0
    finally:
        await collector.stop()


@dataclass
class BrokerAndWorker:
    """An embedded broker on a fixed port and a scripted worker on it, logging to ``log_path``."""

    port: int
    metrics_port: int
    broker: EmbeddedBroker
    settings: Settings
    worker: subprocess.Popen[bytes]
    log_path: Path
    again: EmbeddedBroker | None = None  # the broker started again after the kill
    outages_while_down: float | None = None  # the outage count the waiting worker served

    def alive(self) -> bool:
        return self.worker.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    async def restart_broker(self) -> float:
        """Kill -9 the broker, leave it down long enough for the group's session to run out (the worker restarts
        and waits meanwhile, serving broker_up 0), start it again on its port; the monotonic time it was back,
        once the worker has started again."""
        self.broker.kill()
        await until(lambda: metric(self.metrics_port, "halluwatch_broker_up") == 0.0, 30, "the outage to be reported")
        await asyncio.sleep(5)
        assert self.alive()
        self.outages_while_down = metric(self.metrics_port, "halluwatch_broker_outages_total")
        self.again = EmbeddedBroker(port=self.port).start()
        back_at = time.monotonic()
        await until(lambda: metric(self.metrics_port, "halluwatch_broker_up") == 1.0, 30, "the worker to see the broker")
        return back_at


@asynccontextmanager
async def broker_and_worker(tmp_path: Path, broker_first: bool = True) -> AsyncIterator[BrokerAndWorker]:
    """``broker_first`` False: the worker starts while nothing listens on the broker's port (start it yourself)."""
    port, metrics_port = free_port(), free_port()
    broker = EmbeddedBroker(port=port)
    settings = Settings(broker_url=broker.url, topic_prefix=f"r{uuid.uuid4().hex[:8]}.", partitions=2)
    if broker_first:
        broker.start()
        # Before anything is published: a producer's first request would create the topic with 4 partitions.
        await ensure_topics(bootstrap_servers(broker.url), settings)
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        worker = worker_process(settings, str(tmp_path), metrics_port=metrics_port, output=log)
    running = BrokerAndWorker(port, metrics_port, broker, settings, worker, log_path)
    try:
        yield running
    finally:
        stop(worker)
        broker.stop()
        if running.again is not None:
            running.again.stop()


def log_lines(run: BrokerAndWorker) -> list[str]:
    return run.log_path.read_text(errors="replace").splitlines()


async def test_a_worker_restarts_in_place_when_the_broker_dies_mid_stream_and_verifies_what_comes_after(
        tmp_path: Path) -> None:
    async with broker_and_worker(tmp_path) as run:
        expected, seen, _ = await published_and_verified(run.settings, "warm", run.alive)
        assert seen == expected
        # 60 more conversations (240 turns), and the broker dies once 15 of their verdicts are out: the rest are in
        # flight, at every stage.
        bootstrap = bootstrap_servers(run.settings.broker_url or "")
        collector = Collector(bootstrap, run.settings)
        await collector.start()
        try:
            await publish(synthetic_turns(60, 4, name="inflight"), bootstrap, run.settings)
            while len(collector.collected.verdicts) < 15:
                assert run.alive(), "the worker exited"
                await collector.poll()
        finally:
            await collector.stop()
        pid = run.worker.pid
        back_at = await run.restart_broker()
        assert run.outages_while_down == 1.0  # counted once, by the worker that saw it, not again while waiting
        expected, seen, first = await published_and_verified(run.settings, "after", run.alive)
        recovered = time.monotonic() - back_at
        assert seen == expected, (f"{expected - seen} of {expected} turns published after the restart have no verdict;"
                                  " worker log:\n" + run.log_tail())
        assert run.alive() and run.worker.pid == pid
        assert metric(run.metrics_port, "halluwatch_broker_outages_total") == 1.0
        print(f"broker back -> all {expected} verdicts of the new turns in {recovered:.1f}s (first after {first:.1f}s)")
        stop(run.worker)  # the restarted worker still drains and exits cleanly on SIGTERM
        assert run.worker.returncode == 0, run.log_tail()
    lines = log_lines(run)
    assert sum("restarting this worker in place" in line for line in lines) == 1
    assert sum("waiting for it; the worker starts once" in line for line in lines) == 1
    assert sum("starting the worker" in line for line in lines) == 1
    # The client's retry messages are kept to a line per kind: the outage does not flood the log.
    assert sum("Unable connect to node" in line for line in lines) <= 3, "\n".join(lines[-20:])


async def test_a_worker_started_before_its_broker_waits_for_it(tmp_path: Path) -> None:
    async with broker_and_worker(tmp_path, broker_first=False) as run:
        # Waiting, it serves its metrics, so Prometheus sees a worker that cannot reach its broker.
        await until(lambda: metric(run.metrics_port, "halluwatch_broker_up") == 0.0, 60, "the waiting worker's metrics")
        assert metric(run.metrics_port, "halluwatch_broker_outages_total") == 0.0  # not an outage: never connected
        assert run.alive()
        run.broker.start()
        await until(lambda: metric(run.metrics_port, "halluwatch_broker_up") == 1.0, 60, "the worker to start")
        expected, seen, _ = await published_and_verified(run.settings, "late", run.alive)
        assert seen == expected, run.log_tail()
        assert metric(run.metrics_port, "halluwatch_broker_outages_total") == 0.0
    lines = log_lines(run)
    assert sum("waiting for it; the worker starts once" in line for line in lines) == 1
    assert not any("Traceback" in line for line in lines), "\n".join(lines[-20:])


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if int(stat_fields(int(entry.name))[1]) == pid:
                found.append(int(entry.name))
        except OSError:  # gone meanwhile
            continue
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie waiting to be reaped)."""
    try:
        return stat_fields(pid)[0] != "Z"
    except OSError:
        return False


async def test_a_worker_whose_own_embedded_broker_dies_starts_a_new_one(tmp_path: Path) -> None:
    """``halluwatch worker`` without a broker starts the embedded one as its child; when that child dies, the
    worker restarts in place with a new one (on a new port: the old one's data is gone anyway). The broker is
    killed as soon as the worker serves its metrics, usually while Faust is still starting (creating its topics,
    joining the group): Faust then gives up on its own, which is the same outage."""
    metrics_port = free_port()
    settings = Settings(topic_prefix=f"r{uuid.uuid4().hex[:8]}.", partitions=2)
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        worker = worker_process(settings, str(tmp_path), metrics_port=metrics_port, output=log)

    def brokers_started() -> list[str]:
        return re.findall(r"started an embedded one at (kafka://\S+)", log_path.read_text(errors="replace"))

    try:
        await until(lambda: metric(metrics_port, "halluwatch_broker_up") == 1.0, 60, "the worker to start")
        [first] = children(worker.pid)
        os.kill(first, signal.SIGKILL)
        await until(lambda: len(brokers_started()) == 2 and metric(metrics_port, "halluwatch_broker_up") == 1.0,
                    60, "the worker to start again with a new broker")
        assert worker.poll() is None
        [second] = children(worker.pid)
        assert second != first and not running(first)
        expected, seen, _ = await published_and_verified(replace(settings, broker_url=brokers_started()[-1]), "own",
                                                         lambda: worker.poll() is None)
        assert seen == expected, "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
        stop(worker)
        assert worker.returncode == 0 and not running(second), "the worker left its embedded broker running"
    finally:
        stop(worker)
