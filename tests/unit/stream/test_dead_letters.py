from __future__ import annotations

import pytest

from schemas import DeadLetter
from stream.dead_letters import LetterFilter, parse_since
from stream.errors import StreamError

NOW = 1_796_000_000.0


def letter(dead_letter_id: str, reason: str, failed_at: float, error_type: str = "SchemaError") -> DeadLetter:
    return DeadLetter(dead_letter_id=dead_letter_id, source_topic="halluwatch.turns", partition=0, offset=1, key=None,
                      original_base64="", reason=reason, error_type=error_type, stage="segment", failed_at=failed_at)


@pytest.mark.parametrize(("value", "expected"), [
    ("30m", NOW - 1800), ("2h", NOW - 7200), ("1.5d", NOW - 1.5 * 86400), ("45s", NOW - 45),
    ("2026-12-04", 1_796_342_400.0), ("2026-12-04T01:00:00+01:00", 1_796_342_400.0),
])
def test_since_takes_a_time_ago_or_an_iso_time(value: str, expected: float) -> None:
    assert parse_since(value, now=NOW) == expected


def test_since_rejects_anything_else_with_the_accepted_forms() -> None:
    with pytest.raises(StreamError, match=r"30m, 2h, 1d"):
        parse_since("yesterday", now=NOW)


def test_a_filter_narrows_by_reason_error_type_time_and_id_prefix() -> None:
    old = letter("dead-aaa111", "'bot' is not one of ['user', 'assistant']", NOW - 7200)
    new = letter("dead-bbb222", "the message is not JSON", NOW - 60, error_type="NotJSONError")
    both = (old, new)
    assert [x for x in both if LetterFilter().matches(x)] == [old, new]
    assert [x for x in both if LetterFilter(reason="NOT ONE OF").matches(x)] == [old]
    assert [x for x in both if LetterFilter(reason="notjson").matches(x)] == [new]
    assert [x for x in both if LetterFilter(since=NOW - 3600).matches(x)] == [new]
    assert [x for x in both if LetterFilter(ids=("dead-aaa",)).matches(x)] == [old]
    assert [x for x in both if LetterFilter(reason="json", ids=("dead-aaa",)).matches(x)] == []
