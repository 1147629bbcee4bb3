"""The dead-letter topic as a work queue: read the letters, choose some, send them back where they came from.

A dead letter keeps the message exactly as it arrived (``original_base64``),
its key and where it was read (topic, partition, offset). Replaying sends
those bytes and that key to the source topic unchanged, so a turn keeps its
conversation and turn ids: the records it produces once it is accepted have
the ids it would have had the first time, and nothing is alerted twice.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from schemas import DeadLetter, RecordError, decode
from stream import aiokafka_adapter
from stream.app import topic_name
from stream.errors import StreamError
from stream.settings import Settings

_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(value: str, now: float | None = None) -> float:
    """``15m``, ``2h``, ``1d`` ago, or an ISO date or time (UTC when no zone is given), as Unix seconds."""
    now = time.time() if now is None else now
    ago = _AGO.match(value.strip())
    if ago:
        return now - float(ago.group(1)) * _SECONDS[ago.group(2)]
    try:
        moment = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise StreamError(
            f"--since {value!r} is neither a time ago (30m, 2h, 1d) nor an ISO date or time (2026-12-04T09:30)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


@dataclass(frozen=True)
class LetterFilter:
    """Which letters to take: all of them unless narrowed."""

    reason: str | None = None  # a piece of the reason or error type, any case
    since: float | None = None  # failed at or after this Unix time
    ids: tuple[str, ...] = ()  # dead-letter ids, or unique prefixes of them

    def matches(self, letter: DeadLetter) -> bool:
        if self.reason and self.reason.lower() not in f"{letter.error_type}: {letter.reason}".lower():
            return False
        if self.since is not None and letter.failed_at < self.since:
            return False
        return not self.ids or any(letter.dead_letter_id.startswith(i) for i in self.ids)


@dataclass(frozen=True)
class DeadLetters:
    letters: tuple[DeadLetter, ...]  # in topic order per partition
    unreadable: int  # messages on the topic that are not dead letters at all


def original_bytes(letter: DeadLetter) -> bytes:
    return base64.b64decode(letter.original_base64)


async def read_dead_letters(bootstrap: str, settings: Settings) -> DeadLetters:
    """Every message on the dead-letter topic, from the beginning up to its end when read."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    topic = topic_name(settings, "dlq")
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        if consumer.partitions_for_topic(topic) is None:
            await aiokafka_adapter.refresh_metadata(consumer)
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not partitions:
            return DeadLetters((), 0)
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        letters: list[DeadLetter] = []
        unreadable = 0
        while [tp for tp in partitions if await consumer.position(tp) < ends[tp]]:
            for messages in (await consumer.getmany(timeout_ms=1000)).values():
                for message in messages:
                    try:
                        letters.append(decode(DeadLetter, message.value))
                    except RecordError:
                        unreadable += 1
        return DeadLetters(tuple(letters), unreadable)
    finally:
        await consumer.stop()


async def send_back(letters: Sequence[DeadLetter], bootstrap: str) -> int:
    """Publish each letter's original bytes and key to its source topic; returns how many were sent."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for letter in letters:
            key = letter.key.encode() if letter.key is not None else None
            await producer.send_and_wait(letter.source_topic, key=key, value=original_bytes(letter))
    finally:
        await producer.stop()
    return len(letters)


def chosen(letters: Iterable[DeadLetter], choice: LetterFilter) -> list[DeadLetter]:
    return [letter for letter in letters if choice.matches(letter)]
