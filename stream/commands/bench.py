"""``halluwatch bench``: per-stage latency, token rates and pipeline overhead, with and without prefix reuse.

The same bundled turns run through the stage functions directly (no broker),
first with prefix reuse on and then on a fresh runner with it off.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from agents.evaluation.datasets import BENCH_TURNS
from agents.evaluation.metrics import percentile
from agents.evidence.passages import passage_from_row, today
from agents.inputs import read_jsonl
from agents.model.runner import ModelRunner
from schemas import Passage, Role, StageTiming, Turn
from stream.build import build_pipeline
from stream.commands.common import dump_json
from stream.settings import Settings


def load_bench_turns(path: Path = BENCH_TURNS) -> list[tuple[Turn, list[Passage]]]:
    cases = []
    for n, row in read_jsonl(path):
        turn = Turn(conversation_id=f"bench-{n}", turn_id="1", role=Role.ASSISTANT, text=row["text"])
        passages = [passage_from_row(p, "bench", today(), f"{path}:{n}") for p in row.get("evidence", [])]
        cases.append((turn, passages))
    return cases


async def bench_mode(settings: Settings, reuse: bool, repeat: int) -> dict[str, Any]:
    model = ModelRunner(dataclasses.replace(settings.model, prefix_reuse=reuse))
    pipeline = build_pipeline(settings, model=model)
    cases = load_bench_turns()
    stages: dict[str, list[StageTiming]] = defaultdict(list)
    turn_seconds: list[float] = []
    turn_model_seconds: list[float] = []
    async with model:
        warm_up_tokens = await pipeline.warm_up()  # as a worker does at start-up
        for _ in range(repeat):
            for turn, passages in cases:
                started = time.perf_counter()
                result = await pipeline.check(turn, (), passages)
                turn_seconds.append(time.perf_counter() - started)
                timings = result.claimset.timings + result.verdict.timings
                timings += result.correction.timings if result.correction else ()
                for t in timings:
                    stages[t.stage].append(t)
                turn_model_seconds.append(sum(t.model_seconds for t in timings))
        footprint = await model.footprint()
    all_timings = [t for items in stages.values() for t in items]
    prompt_s = sum(t.prompt_seconds for t in all_timings)
    model_s = sum(t.model_seconds for t in all_timings)
    total_s = sum(turn_seconds)
    return {
        "prefix_reuse": reuse,
        "turns": len(turn_seconds),
        "warm_up_tokens": warm_up_tokens,
        # Peak of the whole process so far: the reuse-on mode runs first, so its figure is its own.
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "model_copies": footprint.model_copies if footprint else 0,
        "weight_mb": footprint.weight_bytes / 2**20 if footprint else 0.0,
        "prefix_cache_mb": footprint.prefix_cache_bytes / 2**20 if footprint else 0.0,
        "prefix_families": footprint.prefix_families if footprint else 0,
        "stages": {
            stage: {
                "median_s": statistics.median(t.seconds for t in items),
                "p95_s": percentile([t.seconds for t in items], 0.95),
                "model_s_mean": statistics.fmean(t.model_seconds for t in items),
                # The evidence cross-encoder's reading (verify), part of the stage's time.
                "encoder_median_s": statistics.median(t.encoder_seconds for t in items),
                # Per turn: prompt tokens evaluated (after prefix reuse), tokens the variable parts needed,
                # and tokens generated.
                "evaluated_tokens_per_turn": sum(t.prompt_tokens for t in items) / len(turn_seconds),
                "variable_tokens_per_turn": sum(t.variable_tokens for t in items) / len(turn_seconds),
                "generated_tokens_per_turn": sum(t.generated_tokens for t in items) / len(turn_seconds),
            }
            for stage, items in stages.items()
        },
        "turn_median_s": statistics.median(turn_seconds),
        "turn_p95_s": percentile(turn_seconds, 0.95),
        "model_s_per_turn": model_s / len(turn_seconds),
        "prompt_tokens_per_s": sum(t.prompt_tokens for t in all_timings) / prompt_s if prompt_s else 0.0,
        "generated_tokens_per_s": sum(t.generated_tokens for t in all_timings) / (model_s - prompt_s)
        if model_s > prompt_s
        else 0.0,
        # 1.0 when every call evaluates only its variable part (the prefixes were evaluated at warm-up).
        "evaluated_over_needed_tokens": sum(t.prompt_tokens for t in all_timings)
        / max(1, sum(t.variable_tokens for t in all_timings)),
        "model_s": model_s,
        "total_s": total_s,
        "overhead_fraction_of_model": (total_s - model_s) / model_s if model_s else 0.0,
    }


async def run_bench(args: argparse.Namespace, settings: Settings) -> int:
    on = await bench_mode(settings, True, args.repeat)
    off = await bench_mode(settings, False, args.repeat)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results = {
        "with_prefix_reuse": on,
        "without_prefix_reuse": off,
        "model_time_ratio_off_over_on": off["model_s_per_turn"] / on["model_s_per_turn"],
        "peak_rss_mb": peak_mb,
    }
    print(format_bench(results))
    out = args.out or Path("bench.json")
    out.write_text(dump_json(results))
    print(f"wrote {out}")
    return 0


def format_bench(r: dict[str, Any]) -> str:
    on, off = r["with_prefix_reuse"], r["without_prefix_reuse"]
    lines = [f"{'':<26}{'reuse on':>12}{'reuse off':>12}"]
    stages = list(on["stages"])
    for stage in stages:
        a, b = on["stages"][stage], off["stages"].get(stage, {"median_s": 0.0, "p95_s": 0.0})
        lines.append(f"{stage + ' median s':<26}{a['median_s']:>12.3f}{b['median_s']:>12.3f}")
        lines.append(f"{stage + ' p95 s':<26}{a['p95_s']:>12.3f}{b['p95_s']:>12.3f}")
        if a.get("encoder_median_s", 0.0) > 0:
            lines.append(f"{stage + ' encoder median s':<26}{a['encoder_median_s']:>12.3f}"
                         f"{b.get('encoder_median_s', 0.0):>12.3f}")
    for key, label in (
        ("turn_median_s", "turn median s"),
        ("turn_p95_s", "turn p95 s"),
        ("model_s_per_turn", "model s per turn"),
        ("prompt_tokens_per_s", "prompt tokens/s"),
        ("generated_tokens_per_s", "generated tokens/s"),
        ("overhead_fraction_of_model", "overhead / model time"),
    ):
        lines.append(f"{label:<26}{on[key]:>12.3f}{off[key]:>12.3f}")
    lines.append(f"model time per turn, off / on: {r['model_time_ratio_off_over_on']:.2f}x")
    lines.append("tokens per turn with reuse on     evaluated    variable part needed    generated")
    for stage in stages:
        a = on["stages"][stage]
        lines.append(f"  {stage:<30}{a['evaluated_tokens_per_turn']:>11.1f}{a['variable_tokens_per_turn']:>24.1f}"
                     f"{a['generated_tokens_per_turn']:>13.1f}")
    lines.append(f"evaluated / needed prompt tokens: {on['evaluated_over_needed_tokens']:.2f} with reuse on,"
                 f" {off['evaluated_over_needed_tokens']:.2f} off; the fixed instructions of every prompt family"
                 f" ({on['warm_up_tokens']} tokens) are evaluated once at start-up, before the turns")
    lines.append(
        f"peak resident memory: {on['peak_rss_mb']:.0f} MB with reuse on ({on['model_copies']} copy of the"
        f" {on['weight_mb']:.0f} MB weights, {on['prefix_cache_mb']:.1f} MB of saved prefixes for"
        f" {on['prefix_families']} prompt families), {r['peak_rss_mb']:.0f} MB over both runs"
    )
    return "\n".join(lines)
