"""Stage 4, sufficiency: is the evidence enough to judge each claim at all?

An autorater in the sense of the Sufficient Context paper: it does not say
whether a claim is right, only whether the evidence could settle it (every
link of a multi-part claim present, any ambiguity resolved). One model call
per claim set; the probability of "sufficient" comes from the model's token
log-probabilities at each label. A claim set without evidence is insufficient
by definition, with no model call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.evidence.passages import render_evidence
from agents.model.backend import Prompt
from agents.model.prompting import PromptTemplate, numbered
from agents.model.runner import ModelRunner
from agents.model.timing import StageClock
from agents.stages.instructions import claim_as_read
from schemas import ClaimSufficiency, Evidence, StageTiming, Sufficiency
from schemas.generate import schema_with_items


@dataclass(frozen=True)
class SufficiencyCheck:
    label: Sufficiency
    why: str = field(metadata={"max_length": 100})


@dataclass(frozen=True)
class SufficiencyOutput:
    checks: tuple[SufficiencyCheck, ...] = field(metadata={"max_items": 32})


def sufficiency_prompt(evidence: Evidence, prompt: PromptTemplate) -> Prompt:
    """The sufficiency call's prompt: the evidence and the claims as the model reads them."""
    return prompt.render(evidence=render_evidence(evidence.passages),
                         claims=numbered([claim_as_read(c) for c in evidence.claimset.claims]))


async def assess_sufficiency(
    evidence: Evidence, model: ModelRunner, prompt: PromptTemplate
) -> tuple[tuple[ClaimSufficiency, ...], StageTiming]:
    """One :class:`ClaimSufficiency` per claim, in claim order, and the stage's timing."""
    clock = StageClock("sufficiency")
    claims = evidence.claimset.claims
    if not claims:
        return (), clock.stop()
    if not evidence.passages:
        none = tuple(
            ClaimSufficiency(claim_id=c.claim_id, label=Sufficiency.INSUFFICIENT, probability=0.0, reason="no evidence")
            for c in claims
        )
        return none, clock.stop()
    schema = schema_with_items(SufficiencyOutput, "checks", len(claims))
    generation = await model.generate(sufficiency_prompt(evidence, prompt), SufficiencyOutput, schema=schema)
    clock.add(generation)
    results = []
    for i, (claim, check) in enumerate(zip(claims, generation.output.checks)):
        probs = generation.label_probs[i] if i < len(generation.label_probs) else {}
        probability = probs.get(Sufficiency.SUFFICIENT.value, 1.0 if check.label is Sufficiency.SUFFICIENT else 0.0)
        results.append(
            ClaimSufficiency(
                claim_id=claim.claim_id,
                label=Sufficiency.SUFFICIENT if probability >= 0.5 else Sufficiency.INSUFFICIENT,
                probability=round(probability, 6),
                reason=check.why[:300],
            )
        )
    return tuple(results), clock.stop()
