"""``halluwatch bench --scripted``: what the stream itself costs, with a model that costs nothing.

A worker process runs every stage on the scripted model
(:mod:`agents.testing.stream_model`) against the embedded broker; synthetic
conversations are published as fast as the producer goes, and the bench
reports turns per second from the first publish to the last verdict, and the
worker's CPU time per turn: the stream's own cost (broker client, Faust,
codecs, retrieval from the knowledge base, scoring), since the model's is nil.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import IO, Any

from schemas import Role, Turn
from stream.app import bootstrap_servers
from stream.broker import EmbeddedBroker, free_port
from stream.commands.common import dump_json
from stream.commands.demo import EVIDENCE
from stream.errors import ReplayError
from stream.process import cpu_seconds, peak_rss_mb, stop
from stream.replay import LoggedTurn, replay_and_collect
from stream.settings import Settings

TOPICS = ("the harbour", "the old bridge", "the city library", "the river", "the observatory")


def synthetic_turns(conversations: int, turns_per_conversation: int, name: str = "bench") -> list[LoggedTurn]:
    """Conversations of a user question and an assistant reply of two sentences, interleaved as live traffic is."""
    logged = []
    for t in range(turns_per_conversation):
        for c in range(conversations):
            subject = TOPICS[(c + t) % len(TOPICS)]
            text = (f"{subject.capitalize()} in town {c} opened in {1850 + (c * 7 + t) % 150}."
                    f" It is {10 + (c + t) % 90} metres long.") if t % 2 else f"When did {subject} in town {c} open?"
            role = Role.ASSISTANT if t % 2 else Role.USER
            logged.append(LoggedTurn(Turn(conversation_id=f"{name}-{c}", turn_id=f"{t}", role=role, text=text), None))
    return logged


def worker_process(settings: Settings, data_dir: str, metrics_port: int | None = None,
                   output: IO[bytes] | None = None, scripted: bool = True,
                   evidence: Path = EVIDENCE) -> subprocess.Popen[bytes]:
    """A ``halluwatch worker`` process, on the scripted model unless ``scripted`` is False; its log goes to
    ``output`` (default: this terminal)."""
    env = {**os.environ, "HALLUWATCH_DATA_DIR": data_dir, "HALLUWATCH_TOPIC_PREFIX": settings.topic_prefix,
           "HALLUWATCH_EVIDENCE": str(evidence), "HALLUWATCH_WEB_RETRIEVER": "off",
           "HALLUWATCH_METRICS_PORT": str(metrics_port or free_port()), "HALLUWATCH_PARTITIONS": str(settings.partitions)}
    command = [sys.executable, "-m", "stream.cli", "worker", "--broker", settings.broker_url or ""]
    command += ["--scripted-model"] if scripted else []
    return subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT if output else None)


async def measure(settings: Settings, turns: list[LoggedTurn], worker: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
    bootstrap = bootstrap_servers(settings.broker_url or "")
    cpu_before = cpu_seconds(worker.pid)
    started = time.time()
    sent, collected, finished = await replay_and_collect(turns, bootstrap, settings, timeout,
                                                         alive=lambda: worker.poll() is None)
    if worker.poll() is not None:
        raise ReplayError(f"the scripted worker exited with code {worker.returncode}: see its message above")
    if not finished:
        raise ReplayError(f"the scripted worker did not finish {len(sent)} turns within {timeout:.0f}s")
    assistant = [t for t in sent if t.role is Role.ASSISTANT]
    last = max(collected.arrival.values())
    latencies = [collected.arrival[v] - t.timestamp for v, t in _by_verdict(assistant, collected).items()]
    return {
        "turns": len(sent),
        "assistant_turns": len(assistant),
        "verdicts": len(collected.verdicts),
        "alerts": len(collected.alerts),
        "dead_letters": len(collected.dead_letters),
        "seconds": last - started,
        "turns_per_s": len(sent) / (last - started),
        "assistant_turns_per_s": len(assistant) / (last - started),
        "worker_cpu_ms_per_turn": 1000 * (cpu_seconds(worker.pid) - cpu_before) / len(sent),
        "latency_median_s": statistics.median(latencies),
        "latency_max_s": max(latencies),
    }


def _by_verdict(turns: list[Turn], collected: Any) -> dict[str, Turn]:
    from schemas import ids

    found = {ids.verdict_id(t.conversation_id, t.turn_id): t for t in turns}
    return {v: t for v, t in found.items() if v in collected.arrival}


async def run_stream_bench(args: argparse.Namespace, settings: Settings) -> int:
    turns = synthetic_turns(args.conversations, args.turns_per_conversation)
    with tempfile.TemporaryDirectory(prefix="halluwatch-bench-") as data_dir, EmbeddedBroker() as broker:
        settings = settings.override(broker_url=broker.url, topic_prefix=f"bench-{uuid.uuid4().hex[:8]}.")
        worker = worker_process(settings, data_dir)
        try:
            # Warm-up: the worker joins the group and the first records pass every stage.
            # (Other conversation ids: a turn id seen before is not checked again.)
            await measure(settings, synthetic_turns(4, 2, name="warm-up"), worker, args.timeout)
            results = await measure(settings, turns, worker, args.timeout)
            results["worker_peak_rss_mb"] = peak_rss_mb(worker.pid)
        finally:
            stop(worker)
    results["cpus"] = os.cpu_count()
    print(format_stream_bench(results))
    if args.out:
        Path(args.out).write_text(dump_json(results))
        print(f"wrote {args.out}")
    return 0


def format_stream_bench(r: dict[str, Any]) -> str:
    return "\n".join([
        f"scripted model (no model cost), one worker, embedded broker, {r['cpus']} CPUs",
        f"turns published             {r['turns']} ({r['assistant_turns']} assistant turns checked)",
        f"verdicts / alerts / dlq     {r['verdicts']} / {r['alerts']} / {r['dead_letters']}",
        f"throughput                  {r['turns_per_s']:.1f} turns/s ({r['assistant_turns_per_s']:.1f} assistant turns/s)",
        f"worker CPU per turn         {r['worker_cpu_ms_per_turn']:.1f} ms (the stream's own cost)",
        f"turn -> verdict latency     median {r['latency_median_s']:.2f} s, max {r['latency_max_s']:.2f} s (all sent at once)",
        f"worker peak memory          {r['worker_peak_rss_mb']:.0f} MB",
    ])
