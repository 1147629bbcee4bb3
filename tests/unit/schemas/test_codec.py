import dataclasses

import orjson
import pytest

from schemas import (
    Alert,
    Citation,
    ErrorFix,
    GroundingDocument,
    Label,
    LabelScores,
    NotJSONError,
    Role,
    SchemaViolation,
    Severity,
    Turn,
    decode,
    derive_id,
    encode,
)
from schemas.generate import SCHEMA_DIR, WIRE_RECORDS, render, schema_file_name
from schemas.records import MAX_GROUNDING, MAX_TURN_CHARS
from tests.support.records import sample_correction, sample_turn_verdict


def test_schema_files_match_the_records() -> None:
    for cls in WIRE_RECORDS:
        committed = (SCHEMA_DIR / schema_file_name(cls)).read_bytes()
        assert committed == render(cls), f"run `python -m schemas.generate`: {cls.__name__} changed"


@pytest.mark.parametrize("record", [sample_turn_verdict(), sample_correction()], ids=["verdict", "correction"])
def test_round_trip_keeps_every_field(record: object) -> None:
    assert decode(type(record), encode(record)) == record


def test_turn_defaults_fill_optional_fields() -> None:
    turn = decode(Turn, b'{"conversation_id":"c1","turn_id":"t1","role":"assistant","text":"Hi."}')
    assert turn == Turn(conversation_id="c1", turn_id="t1", role=Role.ASSISTANT, text="Hi.")


def test_a_turn_carries_the_documents_it_was_answered_from() -> None:
    data = (b'{"conversation_id":"c1","turn_id":"t1","role":"assistant","text":"It is in Erie County.",'
            b'"grounding":[{"text":"Hartland Swamp lies in Niagara County.","published_at":"2020-01-02"}]}')
    turn = decode(Turn, data)
    assert turn.grounding == (GroundingDocument(text="Hartland Swamp lies in Niagara County.", published_at="2020-01-02"),)
    assert decode(Turn, encode(turn)) == turn


@pytest.mark.parametrize(
    ("data", "error", "fragment"),
    [
        (b"\xff\xfe not json", NotJSONError, "not valid JSON"),
        (b'{"conversation_id":"c","turn_id":"t","role":"robot","text":"x"}', SchemaViolation, "role"),
        (b'{"conversation_id":"c","turn_id":"t","role":"user"}', SchemaViolation, "text"),
        (b'{"conversation_id":"c","turn_id":"t","role":"user","text":"x","extra":1}', SchemaViolation, "extra"),
        (b'{"conversation_id":"","turn_id":"t","role":"user","text":"x"}', SchemaViolation, "conversation_id"),
        (b'{"conversation_id":"c","turn_id":"t","role":"assistant","text":"x","grounding":[{"url":"u"}]}',
         SchemaViolation, "text"),
        (b'{"conversation_id":"c","turn_id":"t","role":"assistant","text":"x","grounding":[{"text":"a",'
         b'"published_at":"last May"}]}', SchemaViolation, "published_at"),
        (orjson.dumps({"conversation_id": "c", "turn_id": "t", "role": "assistant", "text": "x",
                       "grounding": [{"text": "a"}] * (MAX_GROUNDING + 1)}), SchemaViolation, "grounding"),
    ],
)
def test_decode_rejects_bad_turns_with_a_reason(data: bytes, error: type, fragment: str) -> None:
    with pytest.raises(error, match=fragment):
        decode(Turn, data)


def test_oversized_turn_is_rejected() -> None:
    data = orjson.dumps({"conversation_id": "c", "turn_id": "t", "role": "user", "text": "x" * (MAX_TURN_CHARS + 1)})
    with pytest.raises(SchemaViolation, match="text"):
        decode(Turn, data)


def test_ids_are_deterministic_and_distinct() -> None:
    assert derive_id("claim", "c", "t", 0) == derive_id("claim", "c", "t", 0)
    assert derive_id("claim", "c", "t", 0) != derive_id("claim", "c", "t", 1)
    assert derive_id("claim", "ab", "c") != derive_id("claim", "a", "bc")


def test_label_scores_pick_the_best_label() -> None:
    scores = LabelScores(true=0.2, false=0.7, unverifiable=0.1)
    assert scores.best() is Label.FALSE and scores.of(Label.TRUE) == 0.2


def test_alert_round_trip() -> None:
    fix = ErrorFix(claim_id="claim-1", claim_text="X is in Berlin.", label=Label.FALSE, correction="X is in Paris.",
                   citations=(Citation(passage_id="p1", url="https://a.example", title="A", published_at=None),))
    alert = Alert(alert_id="alert-1", conversation_id="c", turn_id="t", bot="bot", severity=Severity.HIGH,
                  false_claims=(fix,), corrected_text="X is in Paris.", sources=fix.citations,
                  latency_seconds=1.5, raised_at=100.0)
    assert decode(Alert, encode(alert)) == alert
    assert dataclasses.is_dataclass(alert) and isinstance(alert.false_claims, tuple)
