"""``halluwatch replay``: publish logged dialogues; with --wait, collect and summarize the results."""

from __future__ import annotations

import argparse

import orjson

from agents.evaluation.replay_scoring import rescore_report
from agents.stages.verify import redecide_verdict
from schemas import Label, Turn
from stream.app import bootstrap_servers
from stream.build import build_pipeline
from stream.commands.replay_report import format_summary, report_rows, summarize
from stream.errors import ReplayError
from stream.replay import publish, read_replay, replay_and_collect
from stream.settings import Settings
from stream.topic_admin import ensure_topics


def run_rescore(args: argparse.Namespace, settings: Settings) -> int:
    """Decide a replay report's verdicts again under the current calibration and threshold (no broker, no model)."""
    pipeline = build_pipeline(settings)
    counts, metrics = rescore_report(
        args.file, lambda verdict: redecide_verdict(verdict, pipeline.calibration, pipeline.selective)
    )
    print("verdicts: " + ", ".join(f"{label.value} {counts[label.value]}" for label in Label))
    if metrics is not None:
        print(f"dialogue labels ({metrics['dialogues']} dialogues): accuracy {metrics['accuracy']:.3f},"
              f" macro-F1 {metrics['macro_f1']:.3f}")
    return 0


async def run_replay(args: argparse.Namespace, settings: Settings) -> int:
    if args.rescore:
        return run_rescore(args, settings)
    if not settings.broker_url:
        raise ReplayError(
            "replay needs a broker: pass --broker kafka://host:9092 or set HALLUWATCH_BROKER"
            " (start one with `halluwatch broker` and a `halluwatch worker` beside it)"
        )
    if args.out and not args.wait:
        raise ReplayError("--out writes the collected results: add --wait")
    replay = read_replay(args.file)
    bootstrap = bootstrap_servers(settings.broker_url)

    def published(sent: list[Turn]) -> None:
        print(f"published {len(sent)} turns to {settings.topic_prefix}turns", flush=True)

    if not args.wait:
        await ensure_topics(bootstrap, settings)
        published(await publish(replay.turns, bootstrap, settings, args.pace))
        return 0
    sent, collected, finished = await replay_and_collect(
        replay.turns, bootstrap, settings, args.timeout, args.pace, on_published=published
    )
    summary = summarize(sent, collected, replay.labels)
    print(format_summary(summary))
    if args.out:
        args.out.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in report_rows(sent, collected, replay.labels)))
        print(f"wrote {args.out}")
    if not finished:
        raise ReplayError(
            f"timed out after {args.timeout:.0f}s with results missing: is a worker running against"
            f" {settings.broker_url}? Raise --timeout for long replays"
        )
    return 0
