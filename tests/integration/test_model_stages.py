"""The stages with the real embedded Gemma 3 270M: valid records, allowed labels, determinism."""

from __future__ import annotations

import pytest

from agents.model.runner import ModelRunner
from agents.parsing import shared_parser
from agents.scoring.calibration import VerifyCalibration
from agents.stages.pipeline import Pipeline, Prompts
from agents.stages.segment import SegmentOutput
from schemas import ClaimSet, Correction, Label, Role, Sufficiency, Turn, TurnVerdict, decode, encode
from tests.conftest import SHARED_DATA
from tests.support.records import passage

EIFFEL = passage(
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was completed in 1889.",
    url="https://www.toureiffel.paris/en/the-monument/history",
)


def turn(text: str, turn_id: str = "1") -> Turn:
    return Turn(conversation_id="it", turn_id=turn_id, role=Role.ASSISTANT, text=text)


@pytest.fixture(scope="module")
def pipeline(real_model: ModelRunner) -> Pipeline:
    return Pipeline(real_model, Prompts.load(), VerifyCalibration.load(), shared_parser())


async def test_full_check_gives_valid_records(pipeline: Pipeline) -> None:
    result = await pipeline.check(turn("The Eiffel Tower is in Berlin and was finished in 1889."), (), [EIFFEL])
    assert len(result.claimset.claims) == 2
    for record in (result.claimset, result.verdict):
        assert decode(type(record), encode(record)) == record  # passes its JSON Schema
    labels = {v.label for v in result.verdict.claim_verdicts}
    assert labels <= set(Label)
    for v in result.verdict.claim_verdicts:
        assert sum((v.model_scores.true, v.model_scores.false, v.model_scores.unverifiable)) == pytest.approx(1.0)
        assert 0.0 <= v.confidence <= 1.0
    if result.correction is not None:
        assert decode(Correction, encode(result.correction)) == result.correction
    stages = [t.stage for t in result.claimset.timings + result.verdict.timings]
    assert stages == ["segment", "sources", "sufficiency", "verify"]


async def test_a_made_up_fact_a_question_takes_as_given_is_flagged(pipeline: Pipeline) -> None:
    # "Did you know ...?" is a question by its form; the date it takes as given is the bot's claim.
    result = await pipeline.check(turn("Good question! Did you know that the Eiffel Tower was completed in 1925?"),
                                  (), [EIFFEL])
    # The praise is no claim and the question is none; what it takes as given is (the model may word it twice).
    assert result.claimset.claims
    assert all("Eiffel Tower" in c.text and "1925" in c.text for c in result.claimset.claims)
    assert result.verdict.label is Label.FALSE
    assert result.correction is not None and "1889" in result.correction.corrected_text


async def test_same_input_same_output(pipeline: Pipeline) -> None:
    first = await pipeline.check(turn("Mount Everest is 8,849 metres tall."), (), [EIFFEL])
    second = await pipeline.check(turn("Mount Everest is 8,849 metres tall."), (), [EIFFEL])
    assert first.claimset.claims == second.claimset.claims
    # Labels and text are identical; probabilities may differ in the last bits because llama.cpp
    # evaluates a reused prefix in a different batch split than a cold one.
    for a, b in zip(first.verdict.claim_verdicts, second.verdict.claim_verdicts, strict=True):
        assert (a.label, a.justification, a.signals) == (b.label, b.justification, b.signals)
        assert a.confidence == pytest.approx(b.confidence, abs=1e-3)
        assert a.model_scores.true == pytest.approx(b.model_scores.true, abs=1e-3)


async def test_prefix_reuse_does_not_change_answers(real_model: ModelRunner) -> None:
    prompt = Prompts.load().segment.render(context="(start of conversation)", text="Rome is the capital of Italy.")
    cold = real_model.with_prefix_reuse(False)
    try:
        a = await cold.generate(prompt, SegmentOutput, 100)
    finally:
        await cold.aclose()
    b = await real_model.generate(prompt, SegmentOutput, 100)
    c = await real_model.generate(prompt, SegmentOutput, 100)
    assert a.output == b.output == c.output
    assert 0 == a.reused_tokens < b.reused_tokens == c.reused_tokens < c.prompt_tokens


@pytest.mark.parametrize(
    "text",
    [
        'He said "the {tower} is \\ in Paris" and then typed }}}{{{ ]] "" \\"',
        "Der Eiffelturm steht in Paris. 埃菲尔铁塔位于巴黎。 Эйфелева башня находится в Париже.",
        "The committee met in 1998 and approved the plan. " * 200,
    ],
    ids=["quotes-braces", "non-english", "10k-chars"],
)
async def test_grammar_keeps_json_valid_on_adversarial_input(pipeline: Pipeline, text: str) -> None:
    result = await pipeline.check(turn(text[:10_000], turn_id="adv"), (), [EIFFEL])
    assert decode(ClaimSet, encode(result.claimset)) == result.claimset
    assert decode(TurnVerdict, encode(result.verdict)) == result.verdict
    assert result.verdict.label in set(Label)


async def test_label_scores_come_from_the_model(real_model: ModelRunner) -> None:
    from agents.stages.verify import VerifyOutput

    prompt = Prompts.load().verify.with_evidence.render(evidence="[1] 2023-01-01 Paris is the capital of France.", claims="1. Paris is the capital of France.")
    generation = await real_model.generate(prompt, VerifyOutput, 100)
    verdicts = generation.output.verdicts
    assert len(generation.label_scores) == len(verdicts) >= 1
    for verdict, scores in zip(verdicts, generation.label_scores):
        # Greedy decoding under the grammar picks the label the model scored highest among the three.
        assert verdict.label is scores.best()


async def test_sufficiency_tells_evidence_on_the_claim_from_evidence_on_something_else(pipeline: Pipeline) -> None:
    # The real model and cross-encoder judge; the shipped rater reads their signals, with no model call of its own.
    danube = passage("The Danube flows through Vienna, Bratislava and Budapest before reaching the Black Sea.")
    on_topic = await pipeline.check(turn("The Eiffel Tower is in Paris."), (), [EIFFEL])
    off_topic = await pipeline.check(turn("The Eiffel Tower is in Paris."), (), [danube])
    (on,), (off,) = (r.verdict.claim_verdicts for r in (on_topic, off_topic))
    assert on.sufficiency.label is Sufficiency.SUFFICIENT and off.sufficiency.label is Sufficiency.INSUFFICIENT
    assert on.sufficiency.probability > off.sufficiency.probability
    assert "cross-encoder margins" in on.sufficiency.reason
    timing = next(t for t in on_topic.verdict.timings if t.stage == "sufficiency")
    assert timing.model_seconds == 0 and timing.generated_tokens == 0


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is not beside the checkout")
async def test_an_explanation_full_of_numbers_still_fits_the_answer(real_model: ModelRunner, nli) -> None:
    # AVeriTeC's evidence for a claim about taxes on school books is a tariff table. The model filled its
    # explanation with the table's codes, one token per digit, and the answer was cut mid-string twice: the
    # row failed although the label was written. The budget now covers the longest explanation allowed.
    from agents.evaluation.datasets import read_averitec
    from agents.evidence.passages import assemble_evidence
    from agents.stages.verify import VerifyPrompts, judge
    from tests.support.records import claimset

    (case,) = [c for c in read_averitec(SHARED_DATA / "averitec" / "dev-public.jsonl") if c.case_id == "averitec-dev-370"]
    table = [p for p in case.passages if "4820" in p.text or "4901" in p.text]
    evidence = assemble_evidence(claimset("Government of India has imposed taxes on all school books"), table)
    judgements, _ = await judge(evidence, real_model, nli, VerifyPrompts.load())
    assert len(judgements) == 1 and judgements[0].verdict.label in set(Label)
