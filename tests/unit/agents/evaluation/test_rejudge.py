"""Judging again only the changed cases: which cases changed, and how their fresh results are put in place."""

import copy
from pathlib import Path

import pytest

from agents.errors import InputError
from agents.evaluation.harness import EvalRun, load_judgements
from agents.evaluation.provenance import prompt_digest
from agents.evaluation.rejudge import changed_cases, splice
from agents.stages.verify import VerifyPrompts

SAVED = Path(__file__).resolve().parents[4] / "docs" / "results" / "paraphrase-judgements.json"


def claims_now(run: EvalRun) -> dict[tuple[str, str], list[str]]:
    """What segmentation "made" of every saved turn, as if nothing had changed."""
    return {(t.evidence.claimset.conversation_id, t.evidence.claimset.turn_id): [c.text for c in t.evidence.claimset.claims]
            for case in run.cases for t in case.judged}


def test_only_the_cases_with_a_turn_whose_claims_differ_are_named() -> None:
    run = load_judgements(SAVED)
    made = claims_now(run)
    assert changed_cases(run.cases, made) == []
    third = run.cases[3].judged[0].evidence.claimset
    made[(third.conversation_id, third.turn_id)] = ["A claim the stage writes today."]
    assert changed_cases(run.cases, made) == [run.cases[3].case_id]
    # A turn segmentation did not see this time (a failed row, a --limit) is not taken for a change.
    del made[(third.conversation_id, third.turn_id)]
    assert changed_cases(run.cases, made) == []


def test_a_fresh_case_takes_the_saved_ones_place_and_position() -> None:
    saved = load_judgements(SAVED)
    fresh = EvalRun(dataset=saved.dataset, labels=saved.labels, model=saved.model, nli_model=saved.nli_model)
    again = copy.deepcopy(saved.cases[3])
    again.position = 0  # judged alone, the case was row 0 of its run
    again.predicted = "hallucination" if again.predicted == "factual" else "factual"
    fresh.cases.append(again)
    spliced = splice(saved, fresh, VerifyPrompts.load())
    assert [c.case_id for c in spliced.cases] == [c.case_id for c in saved.cases]
    assert spliced.cases[3] is again and again.position == saved.cases[3].position
    assert spliced.cases[4] is saved.cases[4]
    assert spliced.prompt_digest == prompt_digest(spliced.cases, VerifyPrompts.load())


def test_judgements_of_another_model_are_not_mixed_in() -> None:
    saved = load_judgements(SAVED)
    fresh = EvalRun(dataset=saved.dataset, labels=saved.labels, model="another-model.gguf", nli_model=saved.nli_model)
    with pytest.raises(InputError, match="judge the whole file again"):
        splice(saved, fresh, VerifyPrompts.load())
