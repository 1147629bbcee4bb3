"""``halluwatch bench --paced [R]``: latency when turns arrive at a steady rate the worker can keep up with.

The bundled bench turns go through the embedded broker to one worker process
(the configured model, or the scripted one with ``--scripted``), published at
R turns per second; their evidence is loaded into the worker's knowledge base.
Each turn's latency runs from its timestamp (stamped when it is published) to
its verdict, and to its alert for the turns that raise one. Without R the bench
first measures the worker's capacity (the turns all at once: turns per second
from the first publish to the last verdict) and paces at half of it.

Next to the latencies stands the model's own time per turn, summed from the
stage timings each verdict carries (segment to verify; the correction that
precedes an alert comes after the verdict). With no queueing in the stream,
a turn's latency is close to its model time.
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from agents.errors import InputError
from agents.evaluation.datasets import BENCH_TURNS
from agents.evaluation.metrics import percentile
from agents.inputs import read_jsonl
from schemas import Role, Turn, ids
from stream.app import bootstrap_servers
from stream.broker import EmbeddedBroker
from stream.commands.bench_stream import worker_process
from stream.commands.common import dump_json
from stream.process import peak_rss_mb, stop
from stream.replay import publish_and_wait, verdict_model_seconds
from stream.settings import Settings
from stream.topic_admin import ensure_topics
from stream.worker import model_name


@dataclass(frozen=True)
class PacedReport:
    model: str
    rate: float  # turns published per second
    capacity: float | None  # measured turns per second, when the rate was derived from it
    turns: int
    verdict_latencies: list[float]  # seconds from each turn to its verdict, in publish order
    alert_latencies: list[float]  # seconds from each alerted turn to its alert
    model_seconds: list[float]  # the model's time per turn, segment to verify
    worker_peak_rss_mb: float

    def figures(self) -> dict[str, float | None]:
        def pct(values: list[float], q: float) -> float | None:
            return round(percentile(values, q), 3) if values else None

        model_median = pct(self.model_seconds, 0.5)
        latency_median = pct(self.verdict_latencies, 0.5)
        return {
            "verdict_latency_median_s": latency_median, "verdict_latency_p95_s": pct(self.verdict_latencies, 0.95),
            "verdict_latency_max_s": max(self.verdict_latencies, default=None),
            "alert_latency_median_s": pct(self.alert_latencies, 0.5), "alert_latency_p95_s": pct(self.alert_latencies, 0.95),
            "model_seconds_median": model_median,
            # Only meaningful with a real model: the scripted one takes no time.
            "latency_over_model_time": (round(latency_median / model_median, 3)
                                        if latency_median is not None and model_median and model_median > 0.05 else None),
        }


def bench_turns(name: str, repeat: int) -> tuple[list[Turn], list[dict[str, Any]]]:
    """The bundled turns ``repeat`` times under fresh conversation ids, and their evidence rows."""
    rows = [row for _, row in read_jsonl(BENCH_TURNS)]
    turns = [Turn(conversation_id=f"{name}-{r}-{n}", turn_id="1", role=Role.ASSISTANT, text=row["text"])
             for r in range(repeat) for n, row in enumerate(rows)]
    return turns, [p for row in rows for p in row.get("evidence", [])]


async def paced_bench(settings: Settings, rate: float | None, repeat: int, scripted: bool, timeout: float) -> PacedReport:
    turns, evidence = bench_turns("paced", repeat)
    with tempfile.TemporaryDirectory(prefix="halluwatch-paced-") as data_dir, EmbeddedBroker() as broker:
        settings = settings.override(broker_url=broker.url, topic_prefix=f"paced-{uuid.uuid4().hex[:8]}.")
        await ensure_topics(bootstrap_servers(broker.url), settings)
        evidence_file = Path(data_dir) / "bench-evidence.jsonl"
        evidence_file.write_bytes(b"\n".join(orjson.dumps(row) for row in evidence) + b"\n")
        worker = worker_process(settings, data_dir, scripted=scripted, evidence=evidence_file)
        alive = lambda: worker.poll() is None  # noqa: E731
        try:
            # Warm-up: model load, group join and the prompt prefixes, on turns not measured.
            await publish_and_wait(settings, bench_turns("warm-up", 1)[0][:2], None, timeout, alive)
            capacity = None
            if not rate:
                burst, collected = await publish_and_wait(settings, bench_turns("capacity", 1)[0], None, timeout, alive)
                capacity = len(burst) / max(1e-6, max(collected.arrival.values()) - burst[0].timestamp)
                rate = capacity / 2
            sent, collected = await publish_and_wait(settings, turns, rate, timeout, alive)
            rss = peak_rss_mb(worker.pid)
        finally:
            stop(worker)
    verdicts = [collected.verdicts[ids.verdict_id(t.conversation_id, t.turn_id)] for t in sent]
    latencies = [collected.arrival[v.verdict_id] - t.timestamp for v, t in zip(verdicts, sent)]
    sent_ids = {(t.conversation_id, t.turn_id) for t in sent}
    alerts = [a.latency_seconds for a in collected.alerts.values() if (a.conversation_id, a.turn_id) in sent_ids]
    return PacedReport(
        model="scripted (no model cost)" if scripted else model_name(settings), rate=round(rate, 4),
        capacity=round(capacity, 4) if capacity else None, turns=len(sent),
        verdict_latencies=[round(x, 3) for x in latencies], alert_latencies=[round(x, 3) for x in alerts],
        model_seconds=[round(verdict_model_seconds(v), 3) for v in verdicts], worker_peak_rss_mb=round(rss, 1),
    )


def format_paced(r: PacedReport) -> str:
    f = r.figures()

    def s(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} s"

    source = f"half the measured capacity of {r.capacity:.3f} turns/s" if r.capacity else "as asked"
    ratio = f["latency_over_model_time"]
    return "\n".join([
        f"paced bench: {r.turns} turns at {r.rate:.3f} turns/s ({source}), one worker, embedded broker, model {r.model}",
        f"turn -> verdict   median {s(f['verdict_latency_median_s'])}, p95 {s(f['verdict_latency_p95_s'])},"
        f" max {s(f['verdict_latency_max_s'])} ({len(r.verdict_latencies)} of {r.turns} turns)",
        f"turn -> alert     median {s(f['alert_latency_median_s'])}, p95 {s(f['alert_latency_p95_s'])}"
        f" ({len(r.alert_latencies)} alerts; the correction is written first)",
        f"model time/turn   median {s(f['model_seconds_median'])}"
        + (f"; median latency is {ratio:.2f}x the model's time" if ratio is not None else ""),
        f"worker peak memory {r.worker_peak_rss_mb:.0f} MB",
    ])


async def run_paced_bench(args: argparse.Namespace, settings: Settings) -> int:
    if args.paced < 0:
        raise InputError(f"--paced {args.paced}: give a rate in turns per second above 0, or no value to use half"
                         " the measured capacity")
    report = await paced_bench(settings, args.paced or None, args.repeat, args.scripted, args.timeout)
    print(format_paced(report))
    if args.out:
        Path(args.out).write_text(dump_json({**asdict(report), **report.figures()}))
        print(f"wrote {args.out}")
    return 0
