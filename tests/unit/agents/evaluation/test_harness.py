from __future__ import annotations

from agents.evaluation.harness import (
    FAILED,
    CaseResult,
    EvalRun,
    JudgedTurn,
    decided_labels,
    evaluate_diahalu,
    fit_calibration,
)
from agents.evidence.passages import assemble_evidence
from agents.parsing import shared_parser
from agents.scoring.calibration import VerifyCalibration
from agents.stages.pipeline import Pipeline, Prompts
from agents.stages.verify import UNIFORM, Judgement, ModelVerdict
from schemas import EvidenceFit, Label, LabelScores
from tests.support.records import claimset, dialogue, passage, reply_as_claim


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


def test_a_fit_with_a_judge_learns_from_its_letters_for_retrieved_evidence_only() -> None:
    # The model's scores say nothing (even everywhere); the judge's letters give the label away.
    letters = {Label.TRUE: LabelScores(0.8, 0.1, 0.1), Label.FALSE: LabelScores(0.1, 0.8, 0.1),
               Label.UNVERIFIABLE: LabelScores(0.1, 0.1, 0.8)}
    run = EvalRun(dataset="averitec", labels=tuple(label.value for label in Label))
    for n in range(60):
        gold = list(Label)[n % 3]
        evidence = assemble_evidence(claimset(f"Claim number {n}."), [passage(f"Passage number {n}.")])
        fit = EvidenceFit(mean_logprob=-1.0, min_logprob=-1.0, contradiction=0.0, weakest="", judge=letters[gold],
                          judge_each=letters[gold])
        turn = JudgedTurn(evidence, (Judgement(ModelVerdict(Label.TRUE, "ok"), UNIFORM, fit),))
        run.cases.append(CaseResult(case_id=str(n), position=n, gold=gold.value, predicted="true", judged=[turn],
                                    whole=[turn]))
    judged = fit_calibration([run], judge="qwen-1.5b")
    assert judged.judge == "qwen-1.5b" and "with the judge qwen-1.5b's letters" in judged.source
    assert decided_labels(run, judged) == [c.gold for c in run.cases]
    plain = fit_calibration([run])
    assert plain.judge is None and plain.closed_book is None
    # A claim without evidence, which the judge does not read, is decided by the same rows' fit without letters.
    assert judged.closed_book == plain and judged.for_evidence(grounded=False, closed_book=True) == plain
