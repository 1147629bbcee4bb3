"""Judging again only the cases whose claims have changed.

A segmentation rule that changes the claims of a few turns leaves their saved judgements describing claims
the pipeline no longer checks (see :func:`agents.evaluation.segmentation.claim_drift`). Running the model over
a whole file again takes most of an hour; the changed cases take minutes. :func:`changed_cases` names them
and :func:`splice` puts their fresh results in place of the saved ones, keeping each case's place and
position (the position decides the even/odd split of fitting and reporting).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agents.errors import InputError
from agents.evaluation.harness import CaseResult, EvalRun
from agents.evaluation.provenance import judge_digest, prompt_digest
from agents.evaluation.segmentation import TurnKey, drifted_turns
from agents.model.prompting import PromptTemplate
from agents.stages.verify import VerifyPrompts


def changed_cases(cases: Sequence[CaseResult], made: Mapping[TurnKey, list[str]]) -> list[str]:
    """The ids of the saved cases with a turn whose claims differ from those segmentation ``made`` now, each
    once, in the saved order."""
    return list(dict.fromkeys(turn.case_id for turn in drifted_turns(cases, made)))


def splice(saved: EvalRun, fresh: EvalRun, prompts: VerifyPrompts,
           judge_prompts: Sequence[PromptTemplate] = ()) -> EvalRun:
    """``saved`` with every case that ``fresh`` judged again replaced by its fresh result.

    Both must come from the same model and cross-encoder: a file mixing two would describe neither.
    The stage timings stay those of the saved run (the fresh cases are too few to time the stages by).
    ``judge_prompts``: the judge's prompts, when the fresh cases were read by the judge too.
    """
    for what, old, new in (("model", saved.model, fresh.model), ("cross-encoder", saved.nli_model, fresh.nli_model)):
        if old != new:
            raise InputError(f"the saved judgements were made with the {what} {old or '(unrecorded)'} and these with"
                             f" {new}: judge the whole file again (drop --rejudge-changed)")
    replaced = {case.case_id: case for case in fresh.cases}
    cases = []
    for case in saved.cases:
        new_case = replaced.get(case.case_id)
        if new_case is not None:
            new_case.position = case.position  # a subset's rows were numbered from 0
        cases.append(new_case or case)
    errors = [e for e in saved.errors if e.split(":", 1)[0] not in replaced] + fresh.errors
    run = EvalRun(dataset=saved.dataset, labels=saved.labels, cases=cases, errors=errors, timings=saved.timings,
                  seconds=saved.seconds, calibration=saved.calibration, model=saved.model, nli_model=saved.nli_model)
    run.prompt_digest = prompt_digest(run.cases, prompts)
    run.judge_digest = judge_digest(run.cases, judge_prompts)
    return run
