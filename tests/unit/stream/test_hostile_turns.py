"""Hostile and broken turns at the segment agent: each becomes a dead letter with its reason, or is cleaned and
taken; nothing stops the stream, and the next valid turn is handled."""

import base64
from types import SimpleNamespace

from agents.parsing import shared_parser
from agents.stages.conversation_memory import ConversationMemory
from schemas import ContextLine, DeadLetter, Role, Turn, decode, encode
from stream.stages import StageRunner
from tests.unit.stream.test_runner_metrics import Event, Message, Topics


class Events:
    def __init__(self, *messages: tuple[bytes | None, bytes | None]) -> None:
        self.messages = messages  # (key, value)

    async def events(self):
        for n, (key, value) in enumerate(self.messages):
            yield Event(value, Message(offset=n, key=key))  # type: ignore[arg-type]


def turn(text: str, conversation: str = "conv-1", turn_id: str = "T1") -> bytes:
    return encode(Turn(conversation_id=conversation, turn_id=turn_id, role=Role.USER, text=text))


async def run(*messages: tuple[bytes | None, bytes | None]) -> tuple[list[DeadLetter], dict]:
    topics, context = Topics(), {}
    # User turns only: the segment stage never runs, the conversation memory needs only the parser.
    pipeline = SimpleNamespace(parser=shared_parser())
    runner = StageRunner(app=None, topics=topics, pipeline=pipeline, retriever=None, context=context, delivered={})  # type: ignore[arg-type]
    await runner.consume(Events(*messages), "segment", Turn, runner.on_turn)
    return [decode(DeadLetter, v) for v in topics.dlq.sent], context


def remembered(context: dict, key: bytes) -> list[ContextLine]:
    return list(ConversationMemory.from_bytes(context[key]).lines)


def nested(depth: int) -> bytes:
    return b'{"conversation_id":"c","turn_id":"t","role":"user","text":"x","extra":' + b"[" * depth + b"]" * depth + b"}"


async def test_each_kind_of_broken_value_is_dead_lettered_with_its_reason() -> None:
    broken = {
        "not UTF-8": b'{"conversation_id":"c","text":"\xff\xfe"}',
        "an array": b"[1, 2]",
        "a number": b"42",
        "null": b"null",
        "empty": b"",
        "a tombstone": None,
        "nested past the parser's limit": nested(5000),
        "nested within it": nested(500),
    }
    letters, context = await run(*[(b"conv-1", v) for v in broken.values()], (b"conv-1", turn("Still here?")))
    assert len(letters) == len(broken)
    reasons = dict(zip(broken, (letter.reason for letter in letters)))
    assert reasons["not UTF-8"].startswith("NotJSONError")
    for kind in ("an array", "a number", "null"):
        assert "SchemaViolation" in reasons[kind] and "object" in reasons[kind], reasons[kind]
    assert "tombstone" in reasons["empty"] and "tombstone" in reasons["a tombstone"]
    assert reasons["nested past the parser's limit"].startswith("NotJSONError")
    assert "SchemaViolation" in reasons["nested within it"]
    for letter, value in zip(letters, broken.values()):
        assert base64.b64decode(letter.original_base64) == (value or b"")
    # The valid turn after them all was taken.
    assert remembered(context, b"conv-1") == [ContextLine(role=Role.USER, text="Still here?")]


async def test_a_key_that_is_not_the_conversation_id_is_dead_lettered_and_no_key_is_taken() -> None:
    letters, context = await run((b"user-77", turn("Hi", "conv-1")), (None, turn("Hello", "conv-2")))
    assert len(letters) == 1 and letters[0].error_type == "KeyMismatchError"
    assert "conv-1" in letters[0].reason and "key each turn by its conversation_id" in letters[0].reason
    assert b"conv-1" not in context
    assert remembered(context, b"conv-2") == [ContextLine(role=Role.USER, text="Hello")]


async def test_control_characters_are_removed_before_anything_reads_the_text() -> None:
    letters, context = await run((b"conv-1", turn("Paris\x00 is\x1b[31m in\u202e France.\tYes\n")))
    assert letters == []
    assert remembered(context, b"conv-1")[0].text == "Paris is[31m in France.\tYes\n"
