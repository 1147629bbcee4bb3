"""The compiled schema check never lets through what the reference validator (jsonschema) rejects.

Each sample record is broken in every place it can be (each value replaced by a value of another kind,
an over-long or empty string, a negative or huge number, a key dropped, a key added); for each broken
value, a pass of the compiled check must mean a pass of jsonschema.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from agents.evidence.passages import assemble_evidence
from schemas import Alert, ClaimSet, Correction, Evidence, Role, Turn, TurnVerdict, to_dict
from schemas.codec import _passes_compiled, _validator
from tests.support.records import claimset, passage, sample_correction, sample_turn_verdict

REPLACEMENTS: tuple[Any, ...] = (None, True, 0, -1, 1.5, 10**12, "", "x" * 5000, "zz", [], {}, [None], {"a": 1})


def broken(value: Any) -> Iterator[Any]:
    """Copies of ``value`` with one place changed."""
    if isinstance(value, dict):
        for key in value:
            for replacement in REPLACEMENTS:
                out = copy.deepcopy(value)
                out[key] = replacement
                yield out
            dropped = copy.deepcopy(value)
            del dropped[key]
            yield dropped
            for inner in broken(value[key]):
                out = copy.deepcopy(value)
                out[key] = inner
                yield out
        yield {**copy.deepcopy(value), "unexpected_key": 1}
    elif isinstance(value, list):
        for i, item in enumerate(value):
            for inner in [*REPLACEMENTS, *broken(item)]:
                out = copy.deepcopy(value)
                out[i] = inner
                yield out


def samples() -> list[tuple[type, dict[str, Any]]]:
    turn = Turn(conversation_id="c1", turn_id="t1", role=Role.ASSISTANT, text="Paris is in France.")
    evidence = assemble_evidence(claimset("Paris is in France."), [passage("Paris is the capital of France.")])
    verdict = sample_turn_verdict()
    return [(Turn, to_dict(turn)), (ClaimSet, to_dict(claimset("Paris is in France."))), (Evidence, to_dict(evidence)),
            (TurnVerdict, to_dict(verdict)), (Correction, to_dict(sample_correction()))]


@pytest.mark.parametrize(("cls", "valid"), samples(), ids=lambda v: getattr(v, "__name__", ""))
def test_the_compiled_check_is_never_looser_than_jsonschema(cls: type, valid: dict[str, Any]) -> None:
    assert _passes_compiled(cls, valid) and not list(_validator(cls).iter_errors(valid))
    checked = rejected = 0
    for value in broken(valid):
        checked += 1
        if _passes_compiled(cls, value):
            errors = [e.message for e in _validator(cls).iter_errors(value)]
            assert not errors, f"compiled check passed a value jsonschema rejects: {errors[:2]}"
        else:
            rejected += 1
    assert checked > 50 and rejected > checked // 2


def test_an_alert_schema_compiles() -> None:
    assert _passes_compiled(Alert, {}) is False
