"""``halluwatch soak``: load with faults. Two workers on the scripted model, one killed -9 and restarted mid-run.

The model costs nothing, so the stream is what is under test. Half the
synthetic turns are published; once a third of their verdicts are back, one
worker is stopped (SIGKILL by default: its partitions move to the other after
the session timeout; or SIGTERM, ``--stop term``: it must drain, finishing or
leaving uncommitted the turn in flight, and exit cleanly) and a new one is
started (a second rebalance); then the other half is published. Every record is accounted for: each assistant turn
must get its verdict, turns of one conversation must be verified in order,
no turn may get two alerts, and nothing valid may land in the dead-letter
topic. Duplicate deliveries after the kill are counted (consumers drop them
by record id).
"""

from __future__ import annotations

import argparse
import signal
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from schemas import Turn
from stream.app import bootstrap_servers
from stream.broker import EmbeddedBroker
from stream.commands.bench_stream import synthetic_turns, worker_process
from stream.commands.common import dump_json
from stream.errors import ReplayError
from stream.process import stop
from stream.replay import Collected, Collector, expected_verdict_ids, publish, wait_for
from stream.settings import Settings
from stream.topic_admin import ensure_topics


@dataclass(frozen=True)
class SoakReport:
    turns_sent: int
    assistant_turns: int
    verified: int  # assistant turns with their verdict
    missing: int
    alerts: int
    turns_with_two_alerts: int
    dead_letters: int
    duplicate_deliveries: int  # verdict, correction and alert messages seen more than once (dropped by id)
    out_of_order: int  # conversations whose verdicts were written out of turn order
    alerts_delivered_twice: int  # alert ids seen in two messages (consumers drop the second by id)
    stop_signal: str  # how the first worker was stopped: SIGKILL or SIGTERM
    stopped_exit_code: int  # its exit code (-9 after SIGKILL; 0 is a clean drain after SIGTERM)
    seconds: float
    turns_per_s: float
    killed_at_verdicts: int

    @property
    def passed(self) -> bool:
        if self.stop_signal == "SIGTERM" and (self.alerts_delivered_twice or self.stopped_exit_code != 0):
            return False  # a drained worker leaves nothing behind to send twice
        return not (self.missing or self.turns_with_two_alerts or self.dead_letters or self.out_of_order)


def out_of_order(sent: list[Turn], collected: Collected) -> int:
    """Conversations whose verdicts were first written (per partition offset) in another order than their turns."""
    by_conversation: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for vid, turn in expected_verdict_ids(sent).items():
        if vid in collected.placed:
            by_conversation[turn.conversation_id].append(collected.placed[vid])
    return sum(places != sorted(places) for places in by_conversation.values())


def report(sent: list[Turn], collected: Collected, seconds: float, killed_at: int, stop_signal: signal.Signals,
           exit_code: int) -> SoakReport:
    expected = expected_verdict_ids(sent)
    alerts_per_turn = Counter((a.conversation_id, a.turn_id) for a in collected.alerts.values())
    verified = sum(vid in collected.verdicts for vid in expected)
    return SoakReport(
        turns_sent=len(sent), assistant_turns=len(expected), verified=verified, missing=len(expected) - verified,
        alerts=len(collected.alerts), turns_with_two_alerts=sum(n > 1 for n in alerts_per_turn.values()),
        dead_letters=len(collected.dead_letters),
        duplicate_deliveries=sum(n - 1 for n in collected.deliveries.values() if n > 1),
        out_of_order=out_of_order(sent, collected),
        alerts_delivered_twice=sum(collected.deliveries[a] > 1 for a in collected.alerts),
        stop_signal=stop_signal.name, stopped_exit_code=exit_code, seconds=round(seconds, 2),
        turns_per_s=round(len(sent) / seconds, 2), killed_at_verdicts=killed_at,
    )


async def soak(settings: Settings, conversations: int, turns_per_conversation: int, timeout: float,
               stop_signal: signal.Signals = signal.SIGKILL) -> SoakReport:
    turns = synthetic_turns(conversations, turns_per_conversation, name="soak")
    bootstrap = bootstrap_servers(settings.broker_url or "")
    await ensure_topics(bootstrap, settings)
    collector = Collector(bootstrap, settings)
    await collector.start()
    with tempfile.TemporaryDirectory(prefix="halluwatch-soak-") as data_dir:
        dirs = [Path(data_dir) / name for name in ("a", "b", "a-again")]
        for d in dirs:
            d.mkdir()
        first, steady = worker_process(settings, str(dirs[0])), worker_process(settings, str(dirs[1]))
        restarted = None
        try:
            started = time.time()
            half = len(turns) // 2
            sent = await publish(turns[:half], bootstrap, settings)
            target = len(expected_verdict_ids(sent)) // 3
            deadline = time.monotonic() + timeout
            while len(collector.collected.verdicts) < target:
                if time.monotonic() > deadline or steady.poll() is not None:
                    raise ReplayError(f"only {len(collector.collected.verdicts)} verdicts before the kill; workers stuck?")
                await collector.poll()
            killed_at = len(collector.collected.verdicts)
            first.send_signal(stop_signal)  # SIGKILL: no shutdown, no commit; SIGTERM: drain and leave
            exit_code = first.wait(timeout=120)
            restarted = worker_process(settings, str(dirs[2]))
            sent += await publish(turns[half:], bootstrap, settings)
            await wait_for(collector, sent, max(1.0, deadline - time.monotonic()), alive=lambda: steady.poll() is None)
            seconds = time.time() - started
        finally:
            for worker in (first, steady, restarted):
                if worker is not None:
                    stop(worker)
            await collector.stop()
    return report(sent, collector.collected, seconds, killed_at, stop_signal, exit_code)


def format_soak(r: SoakReport) -> str:
    return "\n".join([
        f"soak: {r.turns_sent} turns ({r.assistant_turns} assistant turns), two scripted workers,"
        f" one stopped with {r.stop_signal} after {r.killed_at_verdicts} verdicts (exit code {r.stopped_exit_code})"
        " and another started",
        f"verified {r.verified} of {r.assistant_turns} (missing {r.missing}), alerts {r.alerts},"
        f" turns with two alerts {r.turns_with_two_alerts}, dead letters {r.dead_letters}",
        f"duplicate deliveries dropped by id {r.duplicate_deliveries} (alerts delivered twice"
        f" {r.alerts_delivered_twice}), conversations out of order {r.out_of_order}",
        f"{r.seconds:.1f} s, {r.turns_per_s:.1f} turns/s including the stop and both rebalances",
        "PASSED: every turn accounted for" if r.passed else "FAILED: see the counts above",
    ])


async def run_soak(args: argparse.Namespace, settings: Settings) -> int:
    with EmbeddedBroker() as broker:
        settings = settings.override(broker_url=broker.url, topic_prefix=f"soak-{uuid.uuid4().hex[:8]}.")
        stop_signal = signal.SIGTERM if args.stop == "term" else signal.SIGKILL
        result = await soak(settings, args.conversations, args.turns_per_conversation, args.timeout, stop_signal)
    print(format_soak(result))
    if args.out:
        args.out.write_text(dump_json(asdict(result)))
        print(f"wrote {args.out}")
    return 0 if result.passed else 1
