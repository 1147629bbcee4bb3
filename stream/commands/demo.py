"""``halluwatch demo``: the whole stream on its embedded defaults, with no configuration.

Imports a small dated evidence file into a fresh local knowledge base (in a
temporary data directory), starts the embedded broker and a worker process
that retrieves its evidence from that knowledge base, waits until that worker
has verified a first turn (its cold start: model load, prompt warm-up, joining
the consumer group), then plays the bundled conversations (some with planted
factual errors) as live traffic, one turn every ``--pace`` seconds with the
conversations interleaved, prints each alert and correction with its dated
sources as it arrives, then a summary with the latency percentiles next to the
model's own time per turn.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from agents.errors import InputError
from agents.evidence.kb.importer import read_import_file
from agents.evidence.kb.store import KnowledgeBase
from agents.evidence.passages import today
from schemas import Alert, Correction, DeadLetter, Role, Turn
from stream.app import bootstrap_servers
from stream.broker import EmbeddedBroker
from stream.commands.replay_report import format_summary, summarize
from stream.errors import ReplayError
from stream.process import peak_rss_mb, stop
from stream.replay import LoggedTurn, publish_and_wait, read_replay, replay_and_collect
from stream.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CONVERSATIONS = EXAMPLES / "demo_conversations.jsonl"
EVIDENCE = EXAMPLES / "demo_evidence.jsonl"
# CLI flags the worker process must see too.
FORWARDED = (("model.model_path", "--model-path"), ("model.n_ctx", "--n-ctx"), ("model.n_threads", "--threads"),
             ("model.n_gpu_layers", "--gpu-layers"), ("calibration_path", "--calibration"), ("max_rounds", "--max-rounds"),
             ("selective_path", "--selective-calibration"), ("abstain_threshold", "--abstain-threshold"),
             ("judge", "--judge"))


def print_record(record: object) -> None:
    if isinstance(record, Alert):
        print(f"\nALERT [{record.severity.value}] {record.conversation_id}/{record.turn_id} ({record.bot}),"
              f" {record.latency_seconds:.1f}s after the turn")
        for claim in record.false_claims:
            print(f"  false: {claim.claim_text}")
            print(f"  fix:   {claim.correction or '(no supported correction)'}")
        for source in record.sources:
            print(f"  source: {source.url} ({source.published_at or 'undated'})")
    elif isinstance(record, Correction):
        print(f"\ncorrection {record.conversation_id}/{record.turn_id} [{record.label.value}],"
              f" FinGrAct {record.score.total}/7")
        print(f"  said:      {record.original_text}")
        print(f"  corrected: {record.corrected_text}")
        cited = {c.passage_id: c for e in record.errors for c in e.citations}.values()
        for citation in cited:
            print(f"  cites:     {citation.url} ({citation.published_at or 'undated'})")
    elif isinstance(record, DeadLetter):
        print(f"\ndead letter from {record.source_topic}: {record.reason}")
    sys.stdout.flush()


def live_schedule(turns: list[LoggedTurn], gap: float) -> list[LoggedTurn]:
    """The turns as concurrent live conversations: one exchange (the turns up to and including an assistant
    reply) of each conversation in turn, ``gap`` seconds between consecutive turns; order within a
    conversation is kept. ``gap`` 0: all at once, in file order."""
    if gap <= 0:
        return [LoggedTurn(t.turn, None) for t in turns]
    exchanges: dict[str, list[list[LoggedTurn]]] = {}
    for logged in turns:
        runs = exchanges.setdefault(logged.turn.conversation_id, [[]])
        if runs[-1] and runs[-1][-1].turn.role is Role.ASSISTANT:
            runs.append([])
        runs[-1].append(logged)
    ordered = [t for i in range(max(map(len, exchanges.values()))) for runs in exchanges.values() if i < len(runs)
               for t in runs[i]]
    return [LoggedTurn(t.turn, n * gap) for n, t in enumerate(ordered)]


async def wait_until_ready(settings: Settings, timeout: float, alive: Callable[[], bool]) -> None:
    """Returns once the worker has verified a greeting: model loaded, prefixes warm, partitions assigned."""
    greeting = Turn(conversation_id=f"demo-warm-up-{uuid.uuid4().hex[:6]}", turn_id="1", role=Role.ASSISTANT,
                    text="Hello! Ask me anything about travel, geography, science or history.")
    await publish_and_wait(settings, [greeting], None, timeout, alive)


def worker_command(args: argparse.Namespace, broker_url: str) -> list[str]:
    command = [sys.executable, "-m", "stream.cli", "worker", "--broker", broker_url]
    values = vars(args)
    for dest, flag in FORWARDED:
        if values.get(dest) is not None:
            command += [flag, str(values[dest])]
    return command


def prepare_knowledge_base(data_dir: Path) -> Path:
    """A fresh knowledge base holding the demo's dated evidence; its path."""
    path = data_dir / "kb.sqlite3"
    kb = KnowledgeBase(path)
    try:
        report = kb.add(read_import_file(EVIDENCE), ingested_at=today())
        stats = kb.stats()
    finally:
        kb.close()
    print(f"knowledge base {path}: {report.added} dated documents from {EVIDENCE.name}"
          f" (published {stats.oldest} to {stats.newest})", flush=True)
    return path


async def run_demo(args: argparse.Namespace, settings: Settings) -> int:
    if args.pace < 0:
        raise InputError(f"--pace {args.pace:g}: give the seconds between turns (0 or more; 0 sends them all at once)")
    replay = read_replay(CONVERSATIONS)
    with tempfile.TemporaryDirectory(prefix="halluwatch-demo-") as data_dir, EmbeddedBroker() as broker:
        kb_path = prepare_knowledge_base(Path(data_dir))
        settings = settings.override(broker_url=broker.url)
        print(f"embedded broker at {broker.url}; starting a worker (model loads in a few seconds)", flush=True)
        # The worker searches only the demo's knowledge base; the web stays off (the demo needs no network).
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "HALLUWATCH_DATA_DIR": data_dir, "HALLUWATCH_KB": str(kb_path),
               "HALLUWATCH_WEB_RETRIEVER": "off", "HALLUWATCH_EVIDENCE": ""}
        spawned = time.monotonic()
        worker = subprocess.Popen(worker_command(args, broker.url), env=env)
        alive = lambda: worker.poll() is None  # noqa: E731
        print(f"live alerts page: http://127.0.0.1:{settings.metrics_port}/alerts", flush=True)
        try:
            await wait_until_ready(settings, args.timeout, alive)
            cold_start = time.monotonic() - spawned
            turns = live_schedule(replay.turns, args.pace)
            print(f"worker ready after {cold_start:.1f}s; playing {len(turns)} turns of the bundled conversations"
                  + (f", one every {args.pace:g}s" if args.pace > 0 else ", all at once"), flush=True)
            sent, collected, finished = await replay_and_collect(
                turns, bootstrap_servers(broker.url), settings, args.timeout,
                pace="original", on_record=print_record, alive=alive,
            )
            if worker.poll() is not None:
                raise ReplayError(f"the demo's worker exited with code {worker.returncode}: see its message above")
            worker_memory = peak_rss_mb(worker.pid)
        finally:
            stop(worker)
    print("\nsummary")
    print(format_summary(summarize(sent, collected, replay.labels)))
    print(f"worker cold start (model load, prompt warm-up, group join): {cold_start:.1f}s")
    print(f"worker peak memory: {worker_memory:.0f} MB")
    if not finished:
        raise ReplayError(f"the demo did not finish within {args.timeout:.0f}s: raise --timeout on a slow machine")
    return 0
