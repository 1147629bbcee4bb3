from __future__ import annotations

from agents.evaluation.harness import FAILED, evaluate_diahalu
from agents.parsing import shared_parser
from agents.scoring.calibration import VerifyCalibration
from agents.stages.pipeline import Pipeline, Prompts
from schemas import LabelScores
from tests.support.records import dialogue, reply_as_claim


async def test_a_dialogue_is_flagged_when_any_turn_is_false_and_a_model_failure_fails_only_its_row(scripted) -> None:
    def verdict(p) -> str:
        if "Atlantis" in p.variable:
            return "not json"  # the model fails on this dialogue, twice: ModelOutputError
        return '{"verdicts":[{"label":"%s","why":"x"}]}' % ("false" if "Pacific" in p.variable else "true")

    runner, _ = scripted(
        {"segment": reply_as_claim,
         "verify_closed_book": verdict, "justify": '{"errors":[],"corrected_text":"x"}'},
        label_scores={"verify_closed_book": lambda p: [LabelScores(0.1, 0.8, 0.1) if "Pacific" in p.variable
                                                       else LabelScores(0.8, 0.1, 0.1)]},
    )
    pipeline = Pipeline(runner, Prompts.load(), VerifyCalibration.identity(), shared_parser(), max_rounds=1)
    cases = [dialogue("made-up", "The Nile flows north.", "The Amazon flows into the Pacific.", hallucination=True),
             dialogue("fine", "The Nile flows north."),
             dialogue("broken", "Atlantis sank in 9600 BC.")]
    run = await evaluate_diahalu(cases, pipeline, show_progress=False)
    assert [(c.case_id, c.position, c.gold, c.predicted) for c in run.cases] == [
        ("made-up", 0, "hallucination", "hallucination"), ("fine", 1, "factual", "factual"),
        ("broken", 2, "factual", FAILED)]
    assert len(run.errors) == 1 and run.errors[0].startswith("broken:")
