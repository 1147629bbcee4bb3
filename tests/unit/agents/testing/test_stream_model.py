"""The scripted stream model answers every stage validly, so a worker on it exercises the whole stream."""

from __future__ import annotations

from agents.model.runner import ModelRunner
from agents.parsing import shared_parser
from agents.scoring.calibration import VerifyCalibration
from agents.stages.pipeline import Pipeline, Prompts
from agents.testing.stream_model import label_of, stream_model_backend
from schemas import Label, Role, Turn
from tests.support.records import passage


async def test_every_stage_gets_a_valid_answer_and_false_claims_get_corrected() -> None:
    backend = stream_model_backend()
    pipeline = Pipeline(ModelRunner(backend=backend), Prompts.load(), VerifyCalibration.identity(), shared_parser())
    # Sentences chosen so that the hash labels one of them false and the other true.
    places = ["Oslo", "Lima", "Cairo", "Quito", "Hanoi", "Dakar", "Perth", "Riga", "Bern", "Accra", "Kyiv", "Doha"]
    things = ["harbour", "museum", "library", "tower", "stadium", "cathedral", "market", "theatre"]
    texts = [f"{p} has a famous {t} built by engineers." for p in places for t in things]
    false = next(t for t in texts if label_of(t) is Label.FALSE)
    true = next(t for t in texts if label_of(t) is Label.TRUE and t.split()[0] != false.split()[0])
    turn = Turn(conversation_id="c", turn_id="1", role=Role.ASSISTANT, text=f"{false} {true}")
    try:
        result = await pipeline.check(turn, (), [passage("Many capitals have famous buildings.")])
    finally:
        await pipeline.model.aclose()
    assert [c.text for c in result.claimset.claims] == [false, true]
    assert [v.label for v in result.verdict.claim_verdicts] == [Label.FALSE, Label.TRUE]
    assert result.correction is not None
    assert backend.prompts == []  # a long-running worker keeps no history
