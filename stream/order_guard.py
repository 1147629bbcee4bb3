"""Every offset of a stage topic reaches its stage, in order, even where Faust drops a message.

Faust can lose messages it has fetched but not yet handed to an agent: after a
rebalance, table recovery seeks the stage topics to their committed offsets,
lets the fetcher run, and then clears the agents' queues without seeking again
(faust-streaming #596, open); the messages cleared away are never fetched
again, and the commit logic then moves the group's offset past them
(#606, open). The kill test lost turns exactly this way: the replacement
worker's verify agent got evidence offsets 0 and 2 of a partition, never 1.

So each agent keeps an :class:`OrderGuard`. It knows the next offset it
expects per partition (at first, the group's committed offset there). A
message beyond it means Faust dropped the ones in between: the guard reads
them from the broker itself and returns them, to be handled before the message
that revealed the hole, so nothing is acknowledged past an unhandled message.
A message before it was handled already (Faust fetched it again) and is
skipped.

A partition can also stall outright: the replacement worker in the kill test
never got a message of one evidence partition, whose fetch position sat at
the end of the log. Nothing arrives there to reveal the hole, so the worker
asks :meth:`OrderGuard.stalled` on a timer, and a partition that has messages
past the next expected offset but has handled none for ``stall_after``
seconds is fetched again from that offset. Refetching is always safe: what was
handled already is skipped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from stream.errors import StreamError

log = logging.getLogger("halluwatch.stream")
READ_TIMEOUT = 60.0  # seconds to read back a hole before giving up on it
STALL_AFTER = 60.0  # seconds without progress on a partition with messages waiting before it is fetched again


@dataclass(frozen=True)
class SourceMessage:
    """The parts of a Kafka message the stages use (Faust's message has the same attributes)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    timestamp: float | None  # seconds since the epoch


@dataclass(frozen=True)
class RecoveredEvent:
    """A message the guard read itself, shaped like the Faust event the stages take."""

    message: SourceMessage
    value: bytes


@dataclass(frozen=True)
class GroupPosition:
    """Where the consumer group stands on a partition: its committed offset, or the log's first offset."""

    offset: int
    committed: bool  # False: the group has committed nothing here (new group, or a broker that forgot it)


class OffsetReader(Protocol):
    """Reads a partition's committed offset and messages straight from the broker."""

    async def next_offset(self, topic: str, partition: int) -> GroupPosition:
        """The group's committed offset, or the partition's first offset if the group has none."""
        ...

    async def read(self, topic: str, partition: int, start: int, end: int) -> list[RecoveredEvent]:
        """The messages with offsets in [start, end), in order (fewer where some were deleted)."""
        ...


class OrderGuard:
    """The next expected offset per partition; see the module doc."""

    def __init__(
        self, reader: OffsetReader, generation: Callable[[], Hashable],
        on_filled: Callable[[str, int, int, int], Awaitable[None]] | None = None,
        stall_after: float = STALL_AFTER, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reader = reader
        self._generation = generation  # changes on every partition assignment: partitions may have moved since
        # Told (topic, partition, first, last) once a hole is handled, so the consumer may commit past it.
        self._on_filled = on_filled
        self._stall_after = stall_after
        self._clock = clock
        self._expected: dict[tuple[str, int], tuple[int, Hashable]] = {}  # (topic, partition) -> (offset, generation)
        self._waiting: dict[tuple[str, int], tuple[int, float]] = {}  # expected offset, and since when, if behind

    async def _next_expected(self, topic: str, partition: int) -> int:
        tp = (topic, partition)
        generation = self._generation()
        known = self._expected.get(tp)
        if known is not None and known[1] == generation:
            return known[0]
        # New here, or after a rebalance: another worker may have handled more in between.
        position = await self._reader.next_offset(topic, partition)
        if known is None or not position.committed:
            # Without a commit the group's past says nothing about this log. A memory-only broker that was
            # restarted (the embedded one) starts every log at offset 0 again, under offsets this worker
            # handled before: trusting those would skip the new turns as repeats. Worst case otherwise is
            # handling uncommitted offsets twice, and their outputs are dropped downstream by record id.
            expected = position.offset
        else:
            expected = max(position.offset, known[0])
        self._expected[tp] = (expected, generation)
        return expected

    async def before(self, topic: str, partition: int, offset: int) -> list[RecoveredEvent] | None:
        """None: the message at ``offset`` was handled already. Otherwise the dropped messages to handle
        before it, oldest first (usually none)."""
        expected = await self._next_expected(topic, partition)
        if offset < expected:
            return None
        if offset == expected:
            return []
        missing = await self._reader.read(topic, partition, expected, offset)
        log.warning("%s[%s]: the consumer skipped offsets %d to %d; read %d of them from the broker",
                    topic, partition, expected, offset - 1, len(missing))
        return missing

    def handled(self, topic: str, partition: int, offset: int) -> None:
        tp = (topic, partition)
        self._expected[tp] = (offset + 1, self._expected.get(tp, (0, self._generation()))[1])

    async def stalled(self, topic: str, partition: int, end: int) -> int | None:
        """The offset to fetch ``topic[partition]`` again from, if it has messages up to ``end`` (exclusive)
        past the next expected offset and none was handled for ``stall_after`` seconds; else None."""
        tp = (topic, partition)
        expected = await self._next_expected(topic, partition)
        now = self._clock()
        waiting = self._waiting.get(tp)
        if expected >= end:
            self._waiting.pop(tp, None)
            return None
        if waiting is None or waiting[0] != expected:
            self._waiting[tp] = (expected, now)
            return None
        if now - waiting[1] < self._stall_after:
            return None
        self._waiting[tp] = (expected, now)  # another full period before the next attempt
        log.warning("%s[%s]: nothing handled past offset %d for %.0fs though the log ends at %d; fetching again"
                    " from %d", topic, partition, expected - 1, now - waiting[1], end - 1, expected)
        return expected

    async def filled(self, recovered: Sequence[RecoveredEvent]) -> None:
        """Every message of a hole has been handled."""
        if recovered and self._on_filled is not None:
            first, last = recovered[0].message, recovered[-1].message
            await self._on_filled(first.topic, first.partition, first.offset, last.offset)


class KafkaOffsetReader:
    """:class:`OffsetReader` over aiokafka: one consumer that never joins the group, started on first use."""

    def __init__(self, bootstrap_servers: str, group_id: str) -> None:
        self._bootstrap = bootstrap_servers
        self._group = group_id
        self._consumer = None
        self._lock = asyncio.Lock()  # the four agents share this one consumer: one assign/seek at a time

    async def _started(self):  # type: ignore[no-untyped-def]
        from aiokafka import AIOKafkaConsumer

        if self._consumer is None:
            # group_id only to read the group's committed offsets; without subscribe() it never joins.
            consumer = AIOKafkaConsumer(bootstrap_servers=self._bootstrap, group_id=self._group,
                                        enable_auto_commit=False, auto_offset_reset="earliest")
            await consumer.start()
            self._consumer = consumer
        return self._consumer

    async def next_offset(self, topic: str, partition: int) -> GroupPosition:
        from aiokafka import TopicPartition

        async with self._lock:
            consumer = await self._started()
            tp = TopicPartition(topic, partition)
            committed = await consumer.committed(tp)
            if committed is not None:
                return GroupPosition(int(committed), committed=True)
            return GroupPosition(int((await consumer.beginning_offsets([tp]))[tp]), committed=False)

    async def read(self, topic: str, partition: int, start: int, end: int) -> list[RecoveredEvent]:
        from aiokafka import TopicPartition

        async with self._lock:
            consumer = await self._started()
            tp = TopicPartition(topic, partition)
            consumer.assign([tp])
            consumer.seek(tp, start)
            # Up to ``end`` itself, not the reported end of the log: the message at ``end`` exists, so everything
            # before it does, and the embedded broker reports too low an end after a batch of several records.
            found: list[RecoveredEvent] = []
            deadline = time.monotonic() + READ_TIMEOUT
            while await consumer.position(tp) < end:
                if time.monotonic() > deadline:
                    raise StreamError(f"could not read back offsets {start} to {end - 1} of {topic}[{partition}] within"
                                      f" {READ_TIMEOUT:.0f}s: is the broker reachable? Replay the affected turns.")
                for record in (await consumer.getmany(tp, timeout_ms=1000)).get(tp, []):
                    if start <= record.offset < end:
                        message = SourceMessage(record.topic, record.partition, record.offset, record.key,
                                                record.timestamp / 1000 if record.timestamp else None)
                        found.append(RecoveredEvent(message, record.value))
            return found

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None


class MemoryOffsetReader:
    """:class:`OffsetReader` over messages held in memory: a test source for the guard."""

    def __init__(self, messages: Sequence[RecoveredEvent], committed: dict[tuple[str, int], int] | None = None) -> None:
        self.messages = list(messages)
        self.committed = dict(committed or {})
        self.reads: list[tuple[str, int, int, int]] = []

    async def next_offset(self, topic: str, partition: int) -> GroupPosition:
        if (topic, partition) in self.committed:
            return GroupPosition(self.committed[(topic, partition)], committed=True)
        first = min((m.message.offset for m in self.messages if (m.message.topic, m.message.partition) == (topic, partition)),
                    default=0)
        return GroupPosition(first, committed=False)

    async def read(self, topic: str, partition: int, start: int, end: int) -> list[RecoveredEvent]:
        self.reads.append((topic, partition, start, end))
        return [m for m in self.messages
                if (m.message.topic, m.message.partition) == (topic, partition) and start <= m.message.offset < end]
