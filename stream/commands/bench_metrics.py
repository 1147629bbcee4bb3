"""``halluwatch bench-metrics``: what exporting metrics costs a worker.

Two measurements, because with a real model the run-to-run noise of a whole
worker is larger than the effect being measured:

1. stream: the bundled demo conversations through a real worker process on
   the embedded broker, metrics on and off in alternating rounds (fresh topics
   and consumer group each round, after a warm-up turn). With metrics on,
   /metrics is scraped every second during the round, five times as often as
   the compose stack's Prometheus does. Throughput is assistant turns per
   second from the first publish to the last verdict, correction and alert;
   the worker's CPU time over the same span (all its threads, from /proc) is
   reported too. Each round replays the conversations ``--copies`` times under
   fresh conversation ids, so that a round is long against start-up jitter.
   The two rounds of a pair run back to back, so the ratio of a pair is little
   disturbed by slow drift on the machine; the report gives the geometric mean
   of the pair ratios with a 95% bootstrap interval, which says whether the
   run can tell the difference from the 2% target at all.
2. code path: the metrics calls the worker makes for one turn, replayed on the
   records that round 1 produced, and one scrape of /metrics, each timed over
   many repetitions, against the measured per-turn processing time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, generate_latest

from schemas import ClaimSet, Role, Turn, ids
from stream.app import bootstrap_servers
from stream.broker import EmbeddedBroker, free_port
from stream.commands.common import dump_json
from stream.commands.demo import CONVERSATIONS, worker_command
from stream.errors import ReplayError
from stream.metrics import PipelineMetrics
from stream.process import stop
from stream.replay import Collected, LoggedTurn, read_replay, replay_and_collect
from stream.settings import Settings

SCRAPE_EVERY = 1.0  # seconds, during metrics-on rounds
COMPOSE_SCRAPE_INTERVAL = 5.0  # the stack's Prometheus setting, for the code-path share


@dataclass(frozen=True)
class Round:
    metrics: bool
    assistant_turns: int
    seconds: float
    scrapes: int
    cpu_seconds: float | None  # the worker process's user + system time during the round (Linux)

    @property
    def throughput(self) -> float:
        return self.assistant_turns / self.seconds


def copied(turns: list[LoggedTurn], copies: int) -> list[LoggedTurn]:
    """The conversations ``copies`` times over, each copy under its own conversation ids."""
    return [replace(t, turn=replace(t.turn, conversation_id=f"{t.turn.conversation_id}-copy{k}"))
            for k in range(copies) for t in turns]


def paired_ratio(pairs: list[tuple[float, float]], resamples: int = 10_000) -> dict[str, float]:
    """Geometric mean of on/off ratios over pairs of rounds, with a 95% bootstrap interval (fixed seed)."""
    logs = np.log([on / off for on, off in pairs])
    rng = np.random.default_rng(0)
    means = logs[rng.integers(0, len(logs), size=(resamples, len(logs)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": float(np.exp(logs.mean())), "ci95_low": float(np.exp(low)), "ci95_high": float(np.exp(high))}


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process and all its threads so far; None where /proc is missing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_http(url: str, process: subprocess.Popen[bytes], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ReplayError(f"the benchmark's worker exited with code {process.returncode}: see its message above")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise ReplayError(f"the benchmark's worker did not serve {url} within {timeout:.0f}s")


async def scrape_loop(url: str, round_over: asyncio.Event) -> int:
    """Fetch /metrics every SCRAPE_EVERY seconds until ``round_over``; returns how many scrapes succeeded."""
    done = 0
    while not round_over.is_set():
        body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
        done += bool(body)
        try:
            await asyncio.wait_for(round_over.wait(), SCRAPE_EVERY)
        except asyncio.TimeoutError:
            pass
    return done


async def run_round(
    args: argparse.Namespace, settings: Settings, broker: EmbeddedBroker, turns: list[LoggedTurn], metrics: bool
) -> tuple[Round, Collected]:
    round_settings = settings.override(topic_prefix=f"bench{uuid.uuid4().hex[:8]}.", broker_url=broker.url)
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="halluwatch-bench-")
    env = {**os.environ, "HALLUWATCH_TOPIC_PREFIX": round_settings.topic_prefix, "HALLUWATCH_METRICS": str(metrics).lower(),
           "HALLUWATCH_METRICS_PORT": str(port), "HALLUWATCH_DATA_DIR": data_dir,
           "HALLUWATCH_PARTITIONS": str(round_settings.partitions)}
    worker = subprocess.Popen(worker_command(args, broker.url), env=env, stdout=subprocess.DEVNULL)
    alive = lambda: worker.poll() is None  # noqa: E731
    bootstrap = bootstrap_servers(broker.url)
    try:
        await asyncio.to_thread(wait_http, f"http://127.0.0.1:{port}/api/alerts", worker)
        warm = [LoggedTurn(Turn(conversation_id="bench-warm-up", turn_id="w", role=Role.ASSISTANT,
                                text="The Eiffel Tower is in Paris."), None)]
        _, _, ok = await replay_and_collect(warm, bootstrap, round_settings, args.timeout, alive=alive)
        if not ok:
            raise ReplayError("the warm-up turn got no verdict: raise --timeout or check the worker's messages")
        round_over = asyncio.Event()
        scraper = asyncio.create_task(scrape_loop(f"http://127.0.0.1:{port}/metrics", round_over)) if metrics else None
        started, cpu_before = time.perf_counter(), cpu_seconds(worker.pid)
        sent, collected, ok = await replay_and_collect(turns, bootstrap, round_settings, args.timeout, alive=alive)
        seconds, cpu_after = time.perf_counter() - started, cpu_seconds(worker.pid)
        cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
        round_over.set()
        scrapes = await scraper if scraper else 0
        if not ok:
            raise ReplayError(f"a round did not finish within {args.timeout:.0f}s: raise --timeout")
    finally:
        stop(worker)
    assistant = sum(t.role is Role.ASSISTANT for t in sent)
    return Round(metrics=metrics, assistant_turns=assistant, seconds=seconds, scrapes=scrapes, cpu_seconds=cpu), collected


def stage_messages(collected: Collected) -> list[tuple[str, object, list[tuple[Any, object]]]]:
    """The (stage, input, outputs) triples the worker recorded metrics for, rebuilt from a round's results."""
    calls: list[tuple[str, object, list[tuple[Any, object]]]] = []
    for verdict in collected.verdicts.values():
        evidence = verdict.evidence
        cs: ClaimSet = evidence.claimset
        turn = Turn(conversation_id=cs.conversation_id, turn_id=cs.turn_id, role=Role.ASSISTANT, text=cs.turn_text,
                    timestamp=cs.turn_timestamp, bot=cs.bot)
        before_sources = replace(cs, sources=(), timings=tuple(t for t in cs.timings if t.stage == "segment"))
        calls.append(("segment", replace(turn, role=Role.USER), []))  # the user turn before it
        calls.append(("segment", turn, [("claimsets", before_sources)]))
        calls.append(("retrieve", before_sources, [("evidence", evidence)]))
        calls.append(("verify", evidence, [("verdicts", verdict)]))
        outputs: list[tuple[Any, object]] = []
        correction_id = ids.correction_id(cs.conversation_id, cs.turn_id)
        alert_id = ids.alert_id(cs.conversation_id, cs.turn_id)
        if correction_id in collected.corrections:
            outputs.append(("corrections", collected.corrections[correction_id]))
        if alert_id in collected.alerts:
            outputs.append(("alerts", collected.alerts[alert_id]))
        calls.append(("justify", verdict, outputs))
    return calls


def code_path_cost(collected: Collected, repeat: int) -> dict[str, float]:
    """Seconds of metrics work per assistant turn, and per scrape of a registry that saw all of them."""
    calls = stage_messages(collected)
    turns = len(collected.verdicts)
    metrics = PipelineMetrics(CollectorRegistry())
    started = time.perf_counter()
    for _ in range(repeat):
        for stage, record, outputs in calls:
            metrics.message_done(stage, record, outputs, 0.5, time.time())
    per_turn = (time.perf_counter() - started) / repeat / turns
    metrics.set_consumer_lag({(t, p): 0 for t in ("turns", "claimsets", "evidence", "verdicts") for p in range(4)})
    scrapes = max(50, repeat // 10)
    started = time.perf_counter()
    for _ in range(scrapes):
        generate_latest(metrics.registry)
    return {"record_seconds_per_turn": per_turn, "scrape_seconds": (time.perf_counter() - started) / scrapes}


def describe_ratio(r: dict[str, float]) -> str:
    # Below 1 is a slowdown with metrics on; the 2% target is about that side only.
    verdict = ("no slowdown of 2% or more" if r["ci95_low"] >= 0.98 else
               "a slowdown of over 2%" if r["ci95_high"] < 0.98 else "cannot tell from a 2% slowdown")
    return f"{r['mean']:.4f} (95% interval {r['ci95_low']:.4f}-{r['ci95_high']:.4f}: {verdict})"


async def run_bench_metrics(args: argparse.Namespace, settings: Settings) -> int:
    turns = copied(read_replay(CONVERSATIONS).turns, args.copies)
    rounds: list[Round] = []
    first_collected: Collected | None = None
    with EmbeddedBroker() as broker:
        for n in range(args.rounds):
            # Alternate which mode goes first so drift (a neighbour's load, thermal state) hits both alike.
            for metrics in ((False, True) if n % 2 == 0 else (True, False)):
                result, collected = await run_round(args, settings, broker, turns, metrics)
                first_collected = first_collected or collected
                rounds.append(result)
                print(f"round {n + 1} metrics {'on ' if metrics else 'off'}: {result.assistant_turns} assistant turns in"
                      f" {result.seconds:.1f}s = {result.throughput:.4f} turns/s"
                      + (f", worker CPU {result.cpu_seconds:.1f}s" if result.cpu_seconds is not None else "")
                      + (f" ({result.scrapes} scrapes)" if metrics else ""), flush=True)
    assert first_collected is not None
    on = [r for r in rounds if r.metrics]
    off = [r for r in rounds if not r.metrics]
    throughput_on = sum(r.assistant_turns for r in on) / sum(r.seconds for r in on)
    throughput_off = sum(r.assistant_turns for r in off) / sum(r.seconds for r in off)
    turn_seconds = 1 / throughput_off
    # Rounds 2n and 2n+1 are one pair (one with metrics, one without, in either order).
    pairs = [(a, b) if a.metrics else (b, a) for a, b in zip(rounds[::2], rounds[1::2])]
    paired = paired_ratio([(on.throughput, off.throughput) for on, off in pairs])
    cpu_ratio = paired_cpu = None
    if all(r.cpu_seconds is not None for r in rounds):
        cpu_on = sum(r.cpu_seconds or 0.0 for r in on) / sum(r.assistant_turns for r in on)
        cpu_off = sum(r.cpu_seconds or 0.0 for r in off) / sum(r.assistant_turns for r in off)
        cpu_ratio = cpu_on / cpu_off
        # CPU seconds per turn: lower is better, so off/on reads like the throughput ratio.
        paired_cpu = paired_ratio([((off.cpu_seconds or 0.0) / off.assistant_turns, (on.cpu_seconds or 0.0) / on.assistant_turns)
                                   for on, off in pairs])
    cost = code_path_cost(first_collected, args.repeat)
    record_share = cost["record_seconds_per_turn"] / turn_seconds
    scrape_share = cost["scrape_seconds"] / COMPOSE_SCRAPE_INTERVAL
    report = {
        "rounds": [r.__dict__ | {"throughput": r.throughput} for r in rounds],
        "stream": {
            "throughput_on": throughput_on,
            "throughput_off": throughput_off,
            "ratio_on_over_off": throughput_on / throughput_off,
            # Interference from other processes only slows a round down: the fastest round of each
            # mode is the least disturbed estimate (as timeit's best-of-N).
            "best_round_ratio_on_over_off": max(r.throughput for r in on) / max(r.throughput for r in off),
            "round_spread_off": (max(r.throughput for r in off) - min(r.throughput for r in off)) / throughput_off
            if len(off) > 1 else None,
            "scrape_every_seconds": SCRAPE_EVERY,
            "cpu_seconds_per_turn_ratio_on_over_off": cpu_ratio,
            "paired_throughput_ratio_on_over_off": paired,
            "paired_cpu_efficiency_ratio_on_over_off": paired_cpu,
            "copies_per_round": args.copies,
            "model_threads": settings.model.n_threads,
        },
        "code_path": cost | {
            "seconds_per_turn_processing": turn_seconds,
            "record_share_of_turn": record_share,
            "scrape_share_at_5s_interval": scrape_share,
        },
    }
    args.out.write_text(dump_json(report))
    print(f"\nstream: metrics on {throughput_on:.4f} turns/s, off {throughput_off:.4f} turns/s,"
          f" ratio on/off {throughput_on / throughput_off:.3f}")
    print(f"        fastest round of each mode, on/off: {report['stream']['best_round_ratio_on_over_off']:.3f}")
    if cpu_ratio is not None:
        print(f"        worker CPU seconds per turn, on/off: {cpu_ratio:.3f}")
    print(f"        pairs of rounds: throughput on/off {describe_ratio(paired)}")
    if paired_cpu is not None:
        print(f"                         turns per CPU second on/off {describe_ratio(paired_cpu)}")
    if report["stream"]["round_spread_off"] is not None:
        print(f"        spread between metrics-off rounds: {report['stream']['round_spread_off']:.1%} of their mean")
    print(f"code path: {cost['record_seconds_per_turn'] * 1e6:.0f} us of metrics work per assistant turn"
          f" = {record_share:.5%} of the {turn_seconds:.1f}s a turn takes;"
          f" one scrape {cost['scrape_seconds'] * 1e3:.2f} ms = {scrape_share:.4%} of a core at a 5 s interval")
    print(f"wrote {args.out}")
    return 0

