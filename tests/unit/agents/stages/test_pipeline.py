"""The pipeline's warm-up keeps the prefix of every prompt family a turn can use."""

from __future__ import annotations

from agents.model.runner import ModelRunner
from agents.parsing import shared_parser
from agents.scoring.calibration import VerifyCalibration
from agents.stages.pipeline import Pipeline, Prompts
from agents.testing.stream_model import stream_model_backend
from schemas import Role, Turn
from tests.support.records import passage


async def test_warm_up_covers_every_family_a_turn_calls() -> None:
    backend = stream_model_backend()
    backend.record_prompts = True
    pipeline = Pipeline(ModelRunner(backend=backend), Prompts.load(), VerifyCalibration.identity(), shared_parser())
    try:
        await pipeline.warm_up()
        turn = Turn(conversation_id="c", turn_id="1", role=Role.ASSISTANT,
                    text="Oslo has a famous harbour built by engineers. Lima has a famous museum built by engineers.")
        await pipeline.check(turn, (), [passage("Many capitals have famous buildings.")])
        await pipeline.check(turn, (), [])  # closed-book: no evidence
    finally:
        await pipeline.model.aclose()
    called = {p.family for p in backend.prompts}
    assert {"segment", "verify", "verify_closed_book"} <= called
    assert "sufficiency" not in called, "the sufficiency rater reads the verify stage's signals, not the model"
    assert called <= set(backend.warmed)
    assert len(backend.warmed) == len(set(backend.warmed)), "each family once"


async def test_without_source_finding_its_prompt_is_not_warmed() -> None:
    backend = stream_model_backend()
    pipeline = Pipeline(ModelRunner(backend=backend), Prompts.load(), VerifyCalibration.identity(), shared_parser(), find_sources=False)
    try:
        await pipeline.warm_up()
    finally:
        await pipeline.model.aclose()
    assert "sources" not in backend.warmed and "segment" in backend.warmed


async def test_check_returns_the_claim_set_the_sources_stage_filled_in() -> None:
    pipeline = Pipeline(ModelRunner(backend=stream_model_backend()), Prompts.load(), VerifyCalibration.identity(), shared_parser())
    try:
        turn = Turn(conversation_id="c", turn_id="1", role=Role.ASSISTANT, text="Oslo has a famous harbour built by engineers.")
        result = await pipeline.check(turn, (), [passage("Many capitals have famous buildings.")])
    finally:
        await pipeline.model.aclose()
    assert [t.stage for t in result.claimset.timings] == ["segment", "sources"]
    assert result.claimset == result.verdict.evidence.claimset
