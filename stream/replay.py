"""Replaying logged dialogues: read them, publish them to ``turns``, and collect what comes back.

Accepted JSONL layouts, detected per line:
* one turn a line: ``{conversation_id, turn_id, role, text, [timestamp], [bot]}``;
* one conversation a line: ``{conversation_id | id, turns: [{role, text, [turn_id | speaker], [timestamp]}]}``,
  which is also the DiaHalu format (its ``label`` is kept to score the replay).
Order within a conversation is preserved: turns are published in file order
with the conversation id as key, so they land on one partition in order.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agents.datasets import read_jsonl
from agents.errors import InputError
from agents.evaluation import classification_metrics, deciding_verdict, percentile
from agents.selective import SelectiveRow, selective_features
from schemas import Alert, Correction, DeadLetter, Label, RecordError, Role, Turn, TurnVerdict, decode, derive_id, encode, from_dict, to_dict
from stream.app import bootstrap_servers, topic_name
from stream.settings import Settings


@dataclass(frozen=True)
class LoggedTurn:
    turn: Turn
    logged_at: float | None  # the original timestamp, for --pace original


@dataclass
class Replay:
    turns: list[LoggedTurn]
    labels: dict[str, bool]  # conversation_id -> hallucination (DiaHalu), when the file has labels


def _turn(conversation_id: str, index: int, raw: dict[str, Any], where: str, bot: str = "") -> LoggedTurn:
    try:
        role = Role(raw["role"])
        text = str(raw["text"])
    except (KeyError, ValueError):
        raise InputError(f"{where}: each turn needs role (user|assistant) and text") from None
    turn_id = str(raw.get("turn_id") or raw.get("speaker") or index)
    logged = raw.get("timestamp")
    return LoggedTurn(
        turn=Turn(conversation_id=conversation_id, turn_id=turn_id, role=role, text=text, bot=str(raw.get("bot") or bot)),
        logged_at=float(logged) if isinstance(logged, (int, float)) else None,
    )


def read_replay(path: Path) -> Replay:
    turns: list[LoggedTurn] = []
    labels: dict[str, bool] = {}
    for n, row in read_jsonl(path):
        where = f"{path}:{n}"
        if isinstance(row.get("turns"), list):
            conversation_id = str(row.get("conversation_id") or row.get("id") or f"line-{n}")
            for i, raw in enumerate(row["turns"]):
                turns.append(_turn(conversation_id, i, raw, f"{where} turn {i}", str(row.get("bot") or row.get("generator") or "")))
            if row.get("label") in ("hallucination", "factual"):
                labels[conversation_id] = row["label"] == "hallucination"
        elif "conversation_id" in row:
            turns.append(_turn(str(row["conversation_id"]), n, row, where))
        else:
            raise InputError(f"{where}: expected a turn (conversation_id, role, text) or a conversation (turns: [...])")
    if not turns:
        raise InputError(f"{path} holds no turns to replay")
    return Replay(turns=turns, labels=labels)


async def ensure_topics(bootstrap: str, settings: Settings) -> None:
    """Create halluwatch's topics if they are missing, so a consumer can subscribe before any worker ran."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    from stream.app import TOPIC_NAMES

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [
            NewTopic(topic_name(settings, n), num_partitions=settings.partitions, replication_factor=1)
            for n in TOPIC_NAMES
            if topic_name(settings, n) not in existing
        ]
        if missing:
            try:
                await admin.create_topics(missing)
            except TopicAlreadyExistsError:
                pass  # a worker created them meanwhile
    finally:
        await admin.close()


async def publish(
    turns: Sequence[LoggedTurn], bootstrap: str, settings: Settings, pace: str = "fast"
) -> list[Turn]:
    """Publish in file order; each turn is stamped with the time it is published. Returns what was sent."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False)
    await producer.start()
    sent: list[Turn] = []
    try:
        previous: float | None = None
        for logged in turns:
            if pace == "original" and logged.logged_at is not None and previous is not None:
                await asyncio.sleep(max(0.0, logged.logged_at - previous))
            previous = logged.logged_at if logged.logged_at is not None else previous
            turn = replace(logged.turn, timestamp=time.time())
            await producer.send_and_wait(
                topic_name(settings, "turns"), key=turn.conversation_id.encode(), value=encode(turn)
            )
            sent.append(turn)
    finally:
        await producer.stop()
    return sent


@dataclass
class Collected:
    """What came back for the replayed turns, de-duplicated by record id."""

    verdicts: dict[str, TurnVerdict] = field(default_factory=dict)
    corrections: dict[str, Correction] = field(default_factory=dict)
    alerts: dict[str, Alert] = field(default_factory=dict)
    dead_letters: dict[str, DeadLetter] = field(default_factory=dict)
    arrival: dict[str, float] = field(default_factory=dict)  # verdict id -> when it arrived
    deliveries: Counter[str] = field(default_factory=Counter)  # record id -> messages seen (duplicates too)


class Collector:
    """Consumes the output topics from their current end, started before publishing."""

    def __init__(self, bootstrap: str, settings: Settings):
        self.bootstrap = bootstrap
        self.settings = settings
        self.collected = Collected()
        self._consumer: Any = None
        self._types = {
            topic_name(settings, "verdicts"): TurnVerdict,
            topic_name(settings, "corrections"): Correction,
            topic_name(settings, "alerts"): Alert,
            topic_name(settings, "dlq"): DeadLetter,
        }

    async def start(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        await self._consumer.start()
        partitions = []
        for topic in self._types:
            for p in self._consumer.partitions_for_topic(topic) or await self._partitions(topic):
                partitions.append(TopicPartition(topic, p))
        self._consumer.assign(partitions)
        await self._consumer.seek_to_end(*partitions)
        for tp in partitions:  # resolve the end offsets now, before anything is published
            await self._consumer.position(tp)

    async def _partitions(self, topic: str) -> set[int]:
        await self._consumer._client.force_metadata_update()
        return self._consumer.partitions_for_topic(topic) or set(range(self.settings.partitions))

    async def poll(self, on_record: Callable[[object], None] | None = None, timeout_ms: int = 1000) -> None:
        batches = await self._consumer.getmany(timeout_ms=timeout_ms)
        c = self.collected
        for tp, messages in batches.items():
            record_type = self._types[tp.topic]
            for message in messages:
                record = decode(record_type, message.value)
                if isinstance(record, TurnVerdict):
                    new = record.verdict_id not in c.verdicts
                    c.verdicts.setdefault(record.verdict_id, record)
                    c.arrival.setdefault(record.verdict_id, message.timestamp / 1000 if message.timestamp else time.time())
                elif isinstance(record, Correction):
                    new = record.correction_id not in c.corrections
                    c.corrections.setdefault(record.correction_id, record)
                elif isinstance(record, Alert):
                    new = record.alert_id not in c.alerts
                    c.alerts.setdefault(record.alert_id, record)
                else:
                    new = record.dead_letter_id not in c.dead_letters
                    c.dead_letters.setdefault(record.dead_letter_id, record)
                c.deliveries[record_id(record)] += 1
                if new and on_record is not None:
                    on_record(record)

    async def stop(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()


def record_id(record: object) -> str:
    for name in ("verdict_id", "correction_id", "alert_id", "dead_letter_id"):
        if hasattr(record, name):
            return str(getattr(record, name))
    raise TypeError(f"not an output record: {type(record).__name__}")


def expected_verdict_ids(turns: Iterable[Turn]) -> dict[str, Turn]:
    return {derive_id("verdict", t.conversation_id, t.turn_id): t for t in turns if t.role is Role.ASSISTANT}


def dead_lettered_turns(collected: Collected) -> set[tuple[str, str]]:
    """(conversation_id, turn_id) of turns whose processing ended in the dead-letter topic.

    A stage after segment fails on a later record of the turn (a claim set, evidence or a
    verdict), which names its turn through the claim set it carries.
    """
    import base64

    import orjson

    found = set()
    for dl in collected.dead_letters.values():
        try:
            obj = orjson.loads(base64.b64decode(dl.original_base64))
            for nested in ("evidence", "claimset"):  # verdict -> evidence -> claim set
                obj = obj.get(nested, obj)
            found.add((str(obj["conversation_id"]), str(obj["turn_id"])))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # not a turn we can name (malformed): counted separately
    return found


async def wait_for(
    collector: Collector,
    sent: Sequence[Turn],
    timeout: float,
    on_record: Callable[[object], None] | None = None,
    alive: Callable[[], bool] = lambda: True,
) -> bool:
    """Poll until every assistant turn has a verdict or a dead letter; False on timeout or when ``alive`` fails."""
    expected = expected_verdict_ids(sent)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        await collector.poll(on_record)
        done_dead = dead_lettered_turns(collector.collected)
        pending = [
            vid for vid, t in expected.items()
            if vid not in collector.collected.verdicts and (t.conversation_id, t.turn_id) not in done_dead
        ]
        if not pending:
            # Corrections and alerts follow their verdict through one more stage: wait for them too,
            # within the same deadline.
            await _drain_followers(collector, on_record, deadline, alive)
            return True
    return False


async def _drain_followers(
    collector: Collector, on_record: Callable[[object], None] | None, deadline: float, alive: Callable[[], bool]
) -> None:
    c = collector.collected
    while time.monotonic() < deadline and alive():
        waiting = [
            v for v in c.verdicts.values()
            if v.label is not Label.TRUE and derive_id("correction", v.evidence.claimset.conversation_id, v.evidence.claimset.turn_id) not in c.corrections
        ]
        if not waiting:
            return
        await collector.poll(on_record)


async def replay_and_collect(
    turns: Sequence[LoggedTurn],
    bootstrap: str,
    settings: Settings,
    timeout: float,
    pace: str = "fast",
    on_published: Callable[[list[Turn]], None] | None = None,
    on_record: Callable[[object], None] | None = None,
    alive: Callable[[], bool] = lambda: True,
) -> tuple[list[Turn], Collected, bool]:
    """Publish ``turns`` and collect their results: (turns sent, what came back, finished in time)."""
    await ensure_topics(bootstrap, settings)
    collector = Collector(bootstrap, settings)
    await collector.start()  # before publishing, so no result is missed
    try:
        sent = await publish(turns, bootstrap, settings, pace)
        if on_published is not None:
            on_published(sent)
        finished = await wait_for(collector, sent, timeout, on_record, alive)
    finally:
        await collector.stop()
    return sent, collector.collected, finished


@dataclass(frozen=True)
class Summary:
    turns: int
    assistant_turns: int
    claims: int
    verdicts: dict[str, int]
    alerts: int
    corrections: int
    dead_letters: int
    latency_median_s: float
    latency_p95_s: float
    accuracy: float | None = None
    macro_f1: float | None = None


def summarize(sent: Sequence[Turn], collected: Collected, labels: dict[str, bool]) -> Summary:
    expected = expected_verdict_ids(sent)
    verdicts = [collected.verdicts[v] for v in expected if v in collected.verdicts]
    latencies = [
        collected.arrival[v.verdict_id] - v.evidence.claimset.turn_timestamp
        for v in verdicts
        if v.evidence.claimset.turn_timestamp > 0
    ]
    counts = {label.value: sum(v.label is label for v in verdicts) for label in Label}
    accuracy = macro_f1 = None
    if labels:
        flagged = {v.evidence.claimset.conversation_id for v in verdicts if v.label is Label.FALSE}
        gold = ["hallucination" if labels[c] else "factual" for c in labels]
        predicted = ["hallucination" if c in flagged else "factual" for c in labels]
        metrics = classification_metrics(gold, predicted, ["factual", "hallucination"])
        accuracy, macro_f1 = metrics.accuracy, metrics.macro_f1
    return Summary(
        turns=len(sent),
        assistant_turns=len(expected),
        claims=sum(len(v.evidence.claimset.claims) for v in verdicts),
        verdicts=counts,
        alerts=len(collected.alerts),
        corrections=len(collected.corrections),
        dead_letters=len(collected.dead_letters),
        latency_median_s=percentile(latencies, 0.5),
        latency_p95_s=percentile(latencies, 0.95),
        accuracy=accuracy,
        macro_f1=macro_f1,
    )


def format_summary(s: Summary) -> str:
    lines = [
        f"turns published: {s.turns} ({s.assistant_turns} assistant turns checked)",
        f"claims: {s.claims}",
        "verdicts: " + ", ".join(f"{k} {v}" for k, v in s.verdicts.items()),
        f"alerts: {s.alerts}, corrections: {s.corrections}, dead letters: {s.dead_letters}",
        f"latency turn -> verdict: median {s.latency_median_s:.1f}s, p95 {s.latency_p95_s:.1f}s",
    ]
    if s.accuracy is not None:
        lines.append(f"dialogue labels: accuracy {s.accuracy:.3f}, macro-F1 {s.macro_f1:.3f}")
    return "\n".join(lines)


def report_rows(sent: Sequence[Turn], collected: Collected, labels: dict[str, bool] | None = None) -> list[dict[str, Any]]:
    """One row per assistant turn; the full verdict record rides along so a report can be re-scored."""
    rows = []
    for vid, turn in expected_verdict_ids(sent).items():
        verdict = collected.verdicts.get(vid)
        cid = derive_id("correction", turn.conversation_id, turn.turn_id)
        aid = derive_id("alert", turn.conversation_id, turn.turn_id)
        rows.append({
            "conversation_id": turn.conversation_id,
            "turn_id": turn.turn_id,
            "text": turn.text,
            "label": verdict.label.value if verdict else None,
            "claims": [
                {
                    "text": v.claim_text, "label": v.label.value, "confidence": round(v.confidence, 4),
                    "sufficiency": v.sufficiency.probability if v.sufficiency else None,
                    "selective_score": v.selective_score, "abstained": v.abstained,
                }
                for v in (verdict.claim_verdicts if verdict else ())
            ],
            "corrected_text": collected.corrections[cid].corrected_text if cid in collected.corrections else None,
            "alert": aid in collected.alerts,
            "latency_s": round(collected.arrival[vid] - turn.timestamp, 3) if verdict else None,
            "conversation_hallucination": (labels or {}).get(turn.conversation_id),
            "verdict": to_dict(verdict) if verdict else None,
        })
    return rows


@dataclass(frozen=True)
class ReportRow:
    line: int
    conversation_id: str
    hallucination: bool | None  # the conversation's label, when the replayed file had one
    verdict: TurnVerdict | None  # None: the turn got no verdict (a dead letter, or a timeout)


def read_report(path: Path) -> Iterable[ReportRow]:
    """The rows of a `replay --wait --out` report, verdicts decoded; a clear error for anything else."""
    for n, row in read_jsonl(path):
        if "verdict" not in row or "conversation_id" not in row:
            raise InputError(f"{path}:{n}: not a replay report row: write one with `halluwatch replay FILE --wait --out`")
        label = row.get("conversation_hallucination")
        try:
            verdict = from_dict(TurnVerdict, row["verdict"]) if row["verdict"] is not None else None
        except RecordError as exc:
            raise InputError(f"{path}:{n}: the verdict record does not match this version of halluwatch ({exc})") from None
        yield ReportRow(n, row["conversation_id"], bool(label) if label is not None else None, verdict)


def rescore_report(path: Path, decide_again: Callable[[TurnVerdict], TurnVerdict]) -> tuple[Counter[str], dict[str, Any] | None]:
    """Re-decide every verdict of a replay report; verdict counts, and dialogue metrics when labelled."""
    counts: Counter[str] = Counter()
    flagged: dict[str, bool] = {}
    labels: dict[str, bool] = {}
    for row in read_report(path):
        if row.hallucination is not None:
            labels[row.conversation_id] = row.hallucination
        if row.verdict is None:
            continue
        verdict = decide_again(row.verdict)
        counts[verdict.label.value] += 1
        flagged[row.conversation_id] = flagged.get(row.conversation_id, False) or verdict.label is Label.FALSE
    if not labels:
        return counts, None
    gold = ["hallucination" if labels[c] else "factual" for c in labels]
    predicted = ["hallucination" if flagged.get(c) else "factual" for c in labels]
    metrics = classification_metrics(gold, predicted, ["factual", "hallucination"])
    return counts, {"dialogues": len(labels), "accuracy": metrics.accuracy, "macro_f1": metrics.macro_f1}


def report_selective_rows(path: Path) -> list[SelectiveRow]:
    """Selective-verdict rows from a labelled replay report: one per conversation, odd ones held out."""
    verdicts: dict[str, list[TurnVerdict]] = {}
    labels: dict[str, bool] = {}
    for row in read_report(path):
        if row.hallucination is None:
            raise InputError(f"{path}:{row.line}: the row has no conversation label; replay a labelled file (DiaHalu format)")
        labels[row.conversation_id] = row.hallucination
        if row.verdict is not None:
            verdicts.setdefault(row.conversation_id, []).append(row.verdict)
    rows = []
    for index, (conversation, gold) in enumerate(labels.items()):
        turns = verdicts.get(conversation, [])
        deciding = deciding_verdict([v for t in turns for v in t.claim_verdicts])
        if deciding is None:
            continue
        turn = next(t for t in turns if deciding in t.claim_verdicts)
        flagged = any(t.label is Label.FALSE for t in turns)
        features = selective_features(deciding.sufficiency, deciding.confidence, deciding.fit, turn.evidence.passages,
                                      turn.evidence.claimset.claim_date, deciding.claim_text)
        rows.append(SelectiveRow(features, flagged == gold, flagged, gold, index % 2 == 1))
    return rows
