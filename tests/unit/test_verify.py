import itertools

import pytest

from agents.calibration import VerifyCalibration
from agents.evidence import assemble_evidence
from agents.prompting import PromptTemplate
from agents.verify import UNIFORM, ModelVerdict, aggregate, claim_signals, decide, verify
from schemas import Label, LabelScores

from tests.unit.records import claimset, passage


@pytest.mark.parametrize("labels", list(itertools.product(list(Label), repeat=3)) + [()])
def test_algorithm_1_on_every_combination(labels: tuple[Label, ...]) -> None:
    if Label.FALSE in labels:
        expected = Label.FALSE
    elif Label.UNVERIFIABLE in labels:
        expected = Label.UNVERIFIABLE
    else:
        expected = Label.TRUE
    assert aggregate(labels) is expected


def test_conflicting_number_and_name_are_flagged() -> None:
    evidence = [passage("The Eiffel Tower stands in Paris, France, and was completed in 1889.")]
    numbers = claim_signals("The Eiffel Tower was completed in 1899.", evidence)
    assert "number(s) 1899 not in the evidence" in numbers.notes
    names = claim_signals("The Eiffel Tower stands in Berlin.", evidence)
    assert any("berlin" in note for note in names.notes)
    agreeing = claim_signals("The Eiffel Tower was completed in 1889.", evidence)
    assert "number(s) 1889 found in the evidence" in agreeing.notes
    assert agreeing.best_passage == 0


def test_decide_uses_calibration_and_keeps_model_scores() -> None:
    evidence = assemble_evidence(claimset("A is in B.", "C was built in 1900."), [passage("A is in B. C was built in 1900.")])
    model = LabelScores(true=0.6, false=0.3, unverifiable=0.1)
    judged = [(ModelVerdict(Label.TRUE, "[1] says so"), model), (ModelVerdict(Label.FALSE, "no"), UNIFORM)]
    verdict = decide(evidence, judged, VerifyCalibration.identity())
    first, second = verdict.claim_verdicts
    assert first.label is Label.TRUE and first.model_scores == model
    assert first.scores.best() is Label.TRUE
    assert first.cited_passages == ("p1",)
    assert verdict.label is aggregate([v.label for v in verdict.claim_verdicts])


async def test_verify_asks_once_per_turn_with_dated_evidence(scripted) -> None:
    runner, backend = scripted(
        {"verify": '{"verdicts":[{"label":"false","why":"[1] says Paris"},{"label":"true","why":"ok"}]}'},
        label_scores={"verify": [LabelScores(0.1, 0.8, 0.1), LabelScores(0.7, 0.2, 0.1)]},
    )
    evidence = assemble_evidence(
        claimset("X is in Berlin.", "X opened in 1889."),
        [passage("X is in Paris. X opened in 1889.", "p2", "2020-01-01"), passage("Old note on X.", "p1", "1990-05-05")],
    )
    verdict = await verify(evidence, runner, PromptTemplate.load("verify"), PromptTemplate.load("verify_closed_book"),
                           VerifyCalibration.identity())
    assert len(backend.prompts) == 1
    variable = backend.prompts[0].variable
    assert variable.index("1990-05-05") < variable.index("2020-01-01"), "evidence must be oldest first"
    assert [v.label for v in verdict.claim_verdicts] == [Label.FALSE, Label.TRUE]
    assert verdict.label is Label.FALSE
    assert verdict.timings[0].stage == "verify"


async def test_no_evidence_means_closed_book(scripted) -> None:
    runner, backend = scripted({"verify_closed_book": '{"verdicts":[{"label":"true","why":"known"}]}'})
    evidence = assemble_evidence(claimset("Paris is in France."), [])
    verdict = await verify(evidence, runner, PromptTemplate.load("verify"), PromptTemplate.load("verify_closed_book"),
                           VerifyCalibration.identity())
    assert backend.prompts[0].family == "verify_closed_book"
    assert verdict.claim_verdicts[0].closed_book
    assert evidence.note == "no evidence found"
