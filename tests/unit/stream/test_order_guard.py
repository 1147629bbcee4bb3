"""OrderGuard: messages the consumer skipped are read back and handled first; repeats are skipped."""

from typing import Any

from prometheus_client import CollectorRegistry

from schemas import Role, Turn, decode, encode
from stream.metrics import PipelineMetrics
from stream.order_guard import MemoryOffsetReader, OrderGuard, RecoveredEvent, SourceMessage
from stream.stages import StageRunner
from tests.unit.stream.test_runner_metrics import Topics

TOPIC = "halluwatch.turns"


def turn_event(offset: int, partition: int = 0) -> RecoveredEvent:
    turn = Turn(conversation_id=f"c{partition}", turn_id=f"T{offset}", role=Role.USER, text=f"turn {offset}")
    return RecoveredEvent(SourceMessage(TOPIC, partition, offset, turn.conversation_id.encode(), 0.0), encode(turn))


class Stream:
    def __init__(self, events: list[RecoveredEvent]) -> None:
        self.events_ = events

    async def events(self):
        for event in self.events_:
            yield event


async def test_guard_reads_back_a_hole_and_skips_what_was_handled() -> None:
    log = [turn_event(n) for n in range(6)]
    reader = MemoryOffsetReader(log, committed={(TOPIC, 0): 1})
    generation = [1]
    guard = OrderGuard(reader, generation=lambda: generation[0])

    assert await guard.before(TOPIC, 0, 0) is None  # before the committed offset: done by an earlier worker
    assert await guard.before(TOPIC, 0, 1) == []
    guard.handled(TOPIC, 0, 1)
    # Offsets 2 and 3 never arrived: they come back from the broker, oldest first.
    assert [e.message.offset for e in await guard.before(TOPIC, 0, 4)] == [2, 3]
    assert reader.reads == [(TOPIC, 0, 2, 4)]
    for offset in (2, 3, 4):
        guard.handled(TOPIC, 0, offset)
    assert await guard.before(TOPIC, 0, 3) is None  # fetched again later: handled already
    # After a rebalance another worker may have gone further: the committed offset wins if it is ahead.
    generation[0] = 2
    reader.committed[(TOPIC, 0)] = 6
    assert await guard.before(TOPIC, 0, 5) is None


async def test_consume_handles_every_offset_once_in_order_when_the_consumer_drops_some() -> None:
    log = [turn_event(n) for n in range(7)]
    delivered = [log[0], log[3], log[1], log[4], log[6], log[6]]  # 2 and 5 dropped, 1 late, 6 twice
    filled: list[tuple[str, int, int, int]] = []

    async def on_filled(*hole: Any) -> None:
        filled.append(hole)

    metrics = PipelineMetrics(CollectorRegistry())
    runner = StageRunner(app=None, topics=Topics(), pipeline=None, retriever=None, context={}, delivered={},  # type: ignore[arg-type]
                         guard=OrderGuard(MemoryOffsetReader(log), generation=lambda: 1, on_filled=on_filled),
                         metrics=metrics)
    handled: list[str] = []

    async def handle(turn: Turn, event: Any) -> list:
        handled.append(turn.turn_id)
        assert decode(Turn, event.value) == turn
        return []

    await runner.consume(Stream(delivered), "segment", Turn, handle)
    assert handled == [f"T{n}" for n in range(7)]
    # The consumer is told each hole once it is handled, so that it commits past it.
    assert filled == [(TOPIC, 0, 1, 2), (TOPIC, 0, 5, 5)]
    # ... and the dashboard sees how many messages the guard read back.
    assert metrics.registry.get_sample_value("halluwatch_consumer_messages_read_back_total", {"stage": "segment"}) == 3


async def test_a_partition_with_waiting_messages_and_no_progress_is_fetched_again() -> None:
    now = [0.0]
    reader = MemoryOffsetReader([turn_event(n) for n in range(3)])
    guard = OrderGuard(reader, generation=lambda: 1, stall_after=60.0, clock=lambda: now[0])
    assert await guard.stalled(TOPIC, 0, end=3) is None  # behind: the clock starts
    now[0] = 59.0
    assert await guard.stalled(TOPIC, 0, end=3) is None
    now[0] = 61.0
    assert await guard.stalled(TOPIC, 0, end=3) == 0  # a minute behind without progress: fetch from 0 again
    assert await guard.stalled(TOPIC, 0, end=3) is None  # and wait another full minute before the next try
    guard.handled(TOPIC, 0, 0)
    now[0] = 200.0
    assert await guard.stalled(TOPIC, 0, end=3) is None  # progress restarts the clock
    guard.handled(TOPIC, 0, 1)
    guard.handled(TOPIC, 0, 2)
    now[0] = 1000.0
    assert await guard.stalled(TOPIC, 0, end=3) is None  # caught up


async def test_a_log_the_broker_forgot_is_read_from_its_start_again() -> None:
    """A memory-only broker restarted: logs start at offset 0 again and the group has no commit. What this
    worker handled before must not make it skip the new messages as repeats."""
    generation = [1]
    reader = MemoryOffsetReader([turn_event(n) for n in range(10)], committed={(TOPIC, 0): 0})
    guard = OrderGuard(reader, generation=lambda: generation[0])
    for offset in range(10):
        assert await guard.before(TOPIC, 0, offset) == []
        guard.handled(TOPIC, 0, offset)
    # The broker comes back empty; three new turns arrive at offsets 0, 1, 2.
    reader.messages, reader.committed = [turn_event(n) for n in range(3)], {}
    generation[0] = 2  # the worker counts the outage (and the rejoin) as a new generation
    assert await guard.before(TOPIC, 0, 0) == []
    guard.handled(TOPIC, 0, 0)
    # Once the group commits on the new log, the guard goes by it again: a hole after offset 0 is read back.
    reader.committed[(TOPIC, 0)] = 1
    generation[0] = 3
    assert [e.message.offset for e in await guard.before(TOPIC, 0, 2)] == [1]


async def test_with_a_commit_the_guard_keeps_what_it_handled_beyond_it() -> None:
    generation = [1]
    reader = MemoryOffsetReader([turn_event(n) for n in range(6)], committed={(TOPIC, 0): 2})
    guard = OrderGuard(reader, generation=lambda: generation[0])
    for offset in range(2, 5):
        assert await guard.before(TOPIC, 0, offset) == []
        guard.handled(TOPIC, 0, offset)
    generation[0] = 2  # a rebalance gave the partition back before the commit of offsets 2 to 4 went out
    assert await guard.before(TOPIC, 0, 3) is None
    assert await guard.before(TOPIC, 0, 5) == []
