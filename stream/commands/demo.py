"""``halluwatch demo``: the whole stream on its embedded defaults, with no configuration.

Imports a small dated evidence file into a fresh local knowledge base (in a
temporary data directory), starts the embedded broker and a worker process
that retrieves its evidence from that knowledge base, replays the bundled
conversations (some with planted factual errors), prints each alert and
correction with its dated sources as it arrives, then a summary.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from agents.evidence.kb.importer import read_import_file
from agents.evidence.kb.store import KnowledgeBase
from agents.evidence.passages import today
from schemas import Alert, Correction, DeadLetter
from stream.app import bootstrap_servers
from stream.broker import EmbeddedBroker
from stream.commands.replay_report import format_summary, summarize
from stream.errors import ReplayError
from stream.process import peak_rss_mb, stop
from stream.replay import read_replay, replay_and_collect
from stream.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CONVERSATIONS = EXAMPLES / "demo_conversations.jsonl"
EVIDENCE = EXAMPLES / "demo_evidence.jsonl"
# CLI flags the worker process must see too.
FORWARDED = (("model.model_path", "--model-path"), ("model.n_ctx", "--n-ctx"), ("model.n_threads", "--threads"),
             ("model.n_gpu_layers", "--gpu-layers"), ("calibration_path", "--calibration"), ("max_rounds", "--max-rounds"),
             ("selective_path", "--selective-calibration"), ("abstain_threshold", "--abstain-threshold"))


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
    replay = read_replay(CONVERSATIONS)
    with tempfile.TemporaryDirectory(prefix="halluwatch-demo-") as data_dir, EmbeddedBroker() as broker:
        kb_path = prepare_knowledge_base(Path(data_dir))
        settings = settings.override(broker_url=broker.url)
        print(f"embedded broker at {broker.url}; starting a worker (model loads in a few seconds)", flush=True)
        # The worker searches only the demo's knowledge base; the web stays off (the demo needs no network).
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "HALLUWATCH_DATA_DIR": data_dir, "HALLUWATCH_KB": str(kb_path),
               "HALLUWATCH_WEB_RETRIEVER": "off", "HALLUWATCH_EVIDENCE": ""}
        worker = subprocess.Popen(worker_command(args, broker.url), env=env)
        print(f"live alerts page: http://127.0.0.1:{settings.metrics_port}/alerts", flush=True)
        try:
            sent, collected, finished = await replay_and_collect(
                replay.turns,
                bootstrap_servers(broker.url),
                settings,
                args.timeout,
                on_published=lambda sent: print(f"replaying {len(sent)} turns from the bundled conversations", flush=True),
                on_record=print_record,
                alive=lambda: worker.poll() is None,
            )
            if worker.poll() is not None:
                raise ReplayError(f"the demo's worker exited with code {worker.returncode}: see its message above")
            worker_memory = peak_rss_mb(worker.pid)
        finally:
            stop(worker)
    print("\nsummary")
    print(format_summary(summarize(sent, collected, replay.labels)))
    print(f"worker peak memory: {worker_memory:.0f} MB")
    if not finished:
        raise ReplayError(f"the demo did not finish within {args.timeout:.0f}s: raise --timeout on a slow machine")
    return 0
