"""Whether saved judgements still describe what the code does.

Saved judgements (``eval ... --save-judgements``) let every report and every
refit run in seconds instead of hours, but they go stale silently: a prompt
edit, a change to how evidence or claims are written into the prompt, or a
segmentation rule that now yields other claims, and the shipped figures
describe code that no longer exists. These checks catch that without the model:

- :func:`prompt_digest` hashes the verify prompts of every
  saved claim set, rendered again from the saved evidence with the current
  templates and code. A run stores it when it is made; a later digest that
  differs means the model would now read other prompts.
- :func:`judge_digest` does the same for the optional judge's letters kept
  with them (both of its readings of every claim it read), so letters read
  under other judge prompts are caught too.
- :func:`other_model` compares the model a run recorded with the one in use.
- :func:`~agents.evaluation.segmentation.claim_drift` lists the turns whose
  saved claims differ from those the current segment stage makes, usually
  from recorded segment answers (``eval segmentation --save-answers``,
  replayed with ``--answers``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Protocol

import orjson

from agents.model.judge import judge_prompt, judge_views
from agents.model.prompting import PromptTemplate
from agents.stages.verify import Judgement, VerifyPrompts, judge_inputs, verify_prompt
from schemas import Evidence


# The harness's JudgedTurn and CaseResult, by shape: the harness imports this module.
class SavedTurn(Protocol):
    @property
    def evidence(self) -> Evidence: ...
    @property
    def judgements(self) -> Sequence[Judgement]: ...


class SavedCase(Protocol):
    @property
    def judged(self) -> Sequence[SavedTurn]: ...
    @property
    def whole(self) -> Sequence[SavedTurn]: ...


def prompt_digest(cases: Iterable[SavedCase], prompts: VerifyPrompts) -> str:
    """A hash of every verify prompt behind the cases' judgements, in case order. (Until session 23 the
    sufficiency stage asked the model too, and its prompts were hashed here as well.)"""
    digest = hashlib.sha256()
    for case in cases:
        for turn in (*case.judged, *case.whole):
            if not turn.evidence.claimset.claims:
                continue  # no claim, no model call
            digest.update(orjson.dumps(verify_prompt(turn.evidence, prompts)))
    return digest.hexdigest()[:16]


def staleness(run_digest: str, cases: Iterable[SavedCase], prompts: VerifyPrompts) -> str | None:
    """Why saved judgements may not describe the current code, or None when their prompts are today's."""
    if not run_digest:
        return "they were saved before runs recorded their prompts, so whether they match the current code is unknown"
    if run_digest != prompt_digest(cases, prompts):
        return "the model would now read other verify prompts than it did when they were made"
    return None


def judge_digest(cases: Iterable[SavedCase], templates: Sequence[PromptTemplate]) -> str:
    """A hash of every judge prompt behind the judge letters the cases keep (each of ``templates``, the
    judge's readings, beside each of :func:`judge_views`, for every claim with letters), in case order; ""
    when no claim has any."""
    digest = hashlib.sha256()
    read = False
    for case in cases:
        for turn in (*case.judged, *case.whole):
            claims, passages = judge_inputs(turn.evidence)
            for claim, judgement in zip(claims, turn.judgements):
                if judgement.fit.judge is None:
                    continue  # the judge did not read it (no judge, no evidence, or the turn's own documents)
                read = True
                for template in templates:
                    for view in judge_views(passages):
                        digest.update(orjson.dumps(judge_prompt(template, claim, view)))
    return digest.hexdigest()[:16] if read else ""


def judge_staleness(run_digest: str, cases: Iterable[SavedCase], templates: Sequence[PromptTemplate]) -> str | None:
    """Why the judge letters saved with judgements may not be what the judge reads today (None when they are,
    or when there are none)."""
    now = judge_digest(cases, templates)
    if not now:
        return None
    if not run_digest:
        return "their judge letters were saved before runs recorded the judge's prompts, so whether they match is unknown"
    if run_digest != now:
        return "the judge would now read other prompts than it did when their letters were read"
    return None


def other_encoder(made_with: str, encoder: str) -> str | None:
    """Why judgements do not carry the cross-encoder's scores the verifier now reads (None when they do).

    Unlike the model, an unrecorded encoder is stale: such files predate it and hold no scores at all."""
    if not made_with:
        return f"they hold no scores of the evidence cross-encoder {encoder}"
    if made_with != encoder:
        return f"their cross-encoder scores come from {made_with}, not {encoder}"
    return None


def other_model(made_with: str, model: str) -> str | None:
    """Why judgements made with one model do not describe another (None when the same, or not recorded)."""
    if made_with and made_with != model:
        return f"they were made with {made_with}, and the model now is {model}"
    return None
