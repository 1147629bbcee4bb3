"""Replaying logged dialogues: read them, publish them to ``turns``, and collect what comes back.

Accepted JSONL layouts, detected per line:
* one turn a line: ``{conversation_id, turn_id, role, text, [timestamp], [bot], [grounding]}``;
* one conversation a line: ``{conversation_id | id, turns: [{role, text, [turn_id | speaker], [timestamp],
  [grounding]}]}``, which is also the DiaHalu format (its ``label`` is kept to score the replay).
``grounding`` is what a retrieval-augmented bot answered from: ``[{text, [url], [title], [published_at]}]``;
such a turn is checked against those documents alone.
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

from agents.errors import InputError
from agents.evidence.passages import grounding_documents
from agents.inputs import read_jsonl
from schemas import (
    Alert,
    Correction,
    DeadLetter,
    DialogueLabel,
    Label,
    Role,
    Turn,
    TurnVerdict,
    decode,
    encode,
    ids,
)
from stream import aiokafka_adapter
from stream.app import bootstrap_servers, topic_name
from stream.errors import ReplayError
from stream.settings import Settings
from stream.topic_admin import ensure_topics


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
        turn=Turn(conversation_id=conversation_id, turn_id=turn_id, role=role, text=text, bot=str(raw.get("bot") or bot),
                  grounding=grounding_documents(raw.get("grounding"), where)),
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
            if row.get("label") in tuple(DialogueLabel):
                labels[conversation_id] = DialogueLabel(row["label"]) is DialogueLabel.HALLUCINATION
        elif "conversation_id" in row:
            turns.append(_turn(str(row["conversation_id"]), n, row, where))
        else:
            raise InputError(f"{where}: expected a turn (conversation_id, role, text) or a conversation (turns: [...])")
    if not turns:
        raise InputError(f"{path} holds no turns to replay")
    return Replay(turns=turns, labels=labels)


async def publish(
    turns: Sequence[LoggedTurn], bootstrap: str, settings: Settings, pace: str = "fast"
) -> list[Turn]:
    """Publish in file order; each turn is stamped with the time it is published. Returns what was sent."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False)
    await producer.start()
    sent: list[Turn] = []
    pending = []  # fast pace: sends are batched and awaited together (order per partition is kept)
    try:
        previous: float | None = None
        for logged in turns:
            if pace == "original" and logged.logged_at is not None and previous is not None:
                await asyncio.sleep(max(0.0, logged.logged_at - previous))
            previous = logged.logged_at if logged.logged_at is not None else previous
            turn = replace(logged.turn, timestamp=time.time())
            delivery = await producer.send(
                topic_name(settings, "turns"), key=turn.conversation_id.encode(), value=encode(turn)
            )
            if pace == "fast":
                pending.append(delivery)
            else:
                await delivery
            sent.append(turn)
        await asyncio.gather(*pending)
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
    placed: dict[str, tuple[int, int]] = field(default_factory=dict)  # verdict id -> (partition, offset) first seen
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
        await aiokafka_adapter.refresh_metadata(self._consumer)
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
                    c.placed.setdefault(record.verdict_id, (tp.partition, message.offset))
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
    return {ids.verdict_id(t.conversation_id, t.turn_id): t for t in turns if t.role is Role.ASSISTANT}


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

    def waiting(v: TurnVerdict) -> bool:
        # Every verdict that is not true gets a correction; a false one also an alert, published just after
        # the correction, so a collector that stopped at the correction lost the last alert of a run.
        turn = (v.evidence.claimset.conversation_id, v.evidence.claimset.turn_id)
        return v.label is not Label.TRUE and (
            ids.correction_id(*turn) not in c.corrections or (v.label is Label.FALSE and ids.alert_id(*turn) not in c.alerts))

    while time.monotonic() < deadline and alive():
        if not any(waiting(v) for v in c.verdicts.values()):
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
    publishing = asyncio.ensure_future(publish(turns, bootstrap, settings, pace))
    try:
        while not publishing.done():
            # Paced turns take their time: what comes back meanwhile is shown as it arrives.
            await collector.poll(on_record, timeout_ms=200)
        sent = await publishing
        if on_published is not None:
            on_published(sent)
        finished = await wait_for(collector, sent, timeout, on_record, alive)
    finally:
        publishing.cancel()  # a no-op once it is done; stops a paced publish when collecting failed
        await collector.stop()
    return sent, collector.collected, finished




def verdict_model_seconds(verdict: TurnVerdict) -> float:
    """The model's time for one turn, segment to verify (the correction that may follow comes after the verdict)."""
    timings = verdict.evidence.claimset.timings + verdict.evidence.timings + verdict.timings
    return sum(t.model_seconds for t in timings)


async def publish_and_wait(settings: Settings, turns: Sequence[Turn], rate: float | None, timeout: float,
                           alive: Callable[[], bool]) -> tuple[list[Turn], Collected]:
    """Publish ``turns`` (all at once, or ``rate`` a second) and wait for their verdicts and corrections;
    a worker that does not finish in ``timeout`` seconds is an error. Each sent turn carries the time it
    was published."""
    logged = [LoggedTurn(t, n / rate if rate else None) for n, t in enumerate(turns)]
    sent, collected, finished = await replay_and_collect(
        logged, bootstrap_servers(settings.broker_url or ""), settings, timeout,
        pace="original" if rate else "fast", alive=alive,
    )
    if not finished:
        raise ReplayError(f"the worker did not verify {len(sent)} turns within {timeout:.0f}s (alive: {alive()})")
    return sent, collected
