"""StageRunner.consume records each processed message and each dead letter into its metrics."""

from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from schemas import Role, Turn, encode
from stream.metrics import PipelineMetrics
from stream.stages import StageRunner


@dataclass
class Message:
    topic: str = "halluwatch.turns"
    partition: int = 0
    offset: int = 0
    key: bytes = b"c"
    timestamp: float = 0.0


@dataclass
class Event:
    value: bytes
    message: Message = field(default_factory=Message)


class Stream:
    def __init__(self, *values: bytes):
        self.values = values

    async def events(self):
        for n, value in enumerate(self.values):
            yield Event(value, Message(offset=n))


class Topic:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def send(self, key: Any, value: bytes) -> None:
        self.sent.append(value)


@dataclass
class Topics:
    dlq: Topic = field(default_factory=Topic)


async def test_consume_records_messages_and_dead_letters() -> None:
    metrics = PipelineMetrics(CollectorRegistry())
    topics = Topics()
    runner = StageRunner(app=None, topics=topics, pipeline=None, retriever=None, context={}, delivered={},  # type: ignore[arg-type]
                         metrics=metrics)

    async def handle(turn: Turn, event: Any) -> list:
        if turn.text == "boom":
            raise RuntimeError("stage failed")
        return []

    good = encode(Turn(conversation_id="c", turn_id="1", role=Role.USER, text="Hello"))
    failing = encode(Turn(conversation_id="c", turn_id="2", role=Role.ASSISTANT, text="boom"))
    await runner.consume(Stream(good, b"{bad", failing), "segment", Turn, handle)

    r = metrics.registry
    assert r.get_sample_value("halluwatch_stage_duration_seconds_count", {"stage": "segment"}) == 1
    assert r.get_sample_value("halluwatch_turns_total", {"role": "user"}) == 1
    assert r.get_sample_value("halluwatch_dead_letters_total", {"stage": "segment", "reason": "NotJSONError"}) == 1
    assert r.get_sample_value("halluwatch_dead_letters_total", {"stage": "segment", "reason": "RuntimeError"}) == 1
    assert len(topics.dlq.sent) == 2
