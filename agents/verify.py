"""Stage 5, verify: a label, confidence and justification per claim; Algorithm 1 per turn.

One model call per turn judges all its claims against the evidence (oldest
first), as in CAAFC. The runner reads the model's probability mass on each
label from its token log-probabilities. A small model's raw label scores
barely separate a right from a wrong place name, so the final label combines
them with cheap claim-vs-evidence signals (word overlap, conflicting numbers
and names, negation) in a multinomial logistic model whose weights are fitted
on the benchmark files (:mod:`agents.calibration`). Both the model's own
scores and the combined scores are kept on every verdict.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.calibration import FEATURE_NAMES, VerifyCalibration
from agents.llm import ModelRunner
from agents.prompting import PromptTemplate
from agents.sources import numbered
from agents.text import content_words, coverage, names, numbers, truncate
from agents.timing import StageClock
from schemas import ClaimVerdict, Evidence, Label, LabelScores, Passage, StageTiming, TurnVerdict, derive_id
from schemas.generate import schema_for

UNIFORM = LabelScores(true=1 / 3, false=1 / 3, unverifiable=1 / 3)
PASSAGE_CHARS = 600
_NEGATION = re.compile(r"\b(not|no|never|none|nobody|neither|nor|n't|cannot|false|denied|deny|denies)\b", re.I)


@dataclass(frozen=True)
class ModelVerdict:
    label: Label
    why: str = field(metadata={"max_length": 120})


@dataclass(frozen=True)
class VerifyOutput:
    verdicts: tuple[ModelVerdict, ...] = field(metadata={"max_items": 32})


def aggregate(labels: Sequence[Label]) -> Label:
    """CAAFC Algorithm 1: any false -> false; else any unverifiable -> unverifiable; else true.

    A turn with no claims has nothing false in it and is true.
    """
    if Label.FALSE in labels:
        return Label.FALSE
    if Label.UNVERIFIABLE in labels:
        return Label.UNVERIFIABLE
    return Label.TRUE


def render_evidence(passages: Sequence[Passage]) -> str:
    if not passages:
        return "(none)"
    return "\n".join(
        f"[{i}] {p.published_at or 'undated'} {truncate(' '.join(p.text.split()), PASSAGE_CHARS)}"
        for i, p in enumerate(passages, start=1)
    )


@dataclass(frozen=True)
class Signals:
    """Cheap claim-vs-evidence signals; ``notes`` explain them to a person."""

    values: tuple[float, ...]
    notes: tuple[str, ...]
    best_passage: int | None  # index into the passages, the one sharing most words with the claim


def claim_signals(claim: str, passages: Sequence[Passage]) -> Signals:
    """Feature values in the order of FEATURE_NAMES (after the three model log-probabilities)."""
    claim_words = content_words(claim)
    all_text = " ".join(p.text for p in passages)
    all_words = content_words(all_text)
    overlaps = [coverage(claim_words, content_words(p.text)) for p in passages]
    best = max(range(len(passages)), key=overlaps.__getitem__) if passages else None
    best_overlap = overlaps[best] if best is not None else 0.0
    notes: list[str] = []

    claim_numbers = numbers(claim)
    evidence_numbers = numbers(all_text)
    missing_numbers = claim_numbers - evidence_numbers
    number_conflict = float(bool(missing_numbers) and bool(evidence_numbers))
    number_match = float(bool(claim_numbers) and not missing_numbers)
    if number_conflict:
        notes.append(f"number(s) {', '.join(sorted(missing_numbers))} not in the evidence")
    elif number_match:
        notes.append(f"number(s) {', '.join(sorted(claim_numbers))} found in the evidence")

    claim_names = names(claim)
    missing_names = {n for n in claim_names if n not in all_words}
    best_names = names(passages[best].text) if best is not None else set()
    name_conflict = float(bool(missing_names) and bool(best_names - claim_names) and best_overlap >= 0.3)
    if name_conflict:
        notes.append(f"name(s) {', '.join(sorted(missing_names))} not in the evidence, which names others")

    negation_mismatch = 0.0
    if best is not None and best_overlap >= 0.3:
        negation_mismatch = float(bool(_NEGATION.search(claim)) != bool(_NEGATION.search(passages[best].text)))
        if negation_mismatch:
            notes.append("negated in one of claim and evidence but not the other")
    if passages and best_overlap < 0.2:
        notes.append("little word overlap with any passage")

    values = (
        best_overlap,
        coverage(claim_words, all_words) if passages else 0.0,
        number_conflict,
        number_match,
        name_conflict,
        negation_mismatch,
        float(not passages),
        math.log1p(len(passages)),
    )
    assert len(values) + 3 == len(FEATURE_NAMES)
    return Signals(values=values, notes=tuple(notes), best_passage=best)


def features(model_scores: LabelScores, signals: Signals) -> tuple[float, ...]:
    return tuple(model_scores.of(label) for label in Label) + signals.values


async def judge(
    evidence: Evidence,
    model: ModelRunner,
    prompt: PromptTemplate,
    closed_book_prompt: PromptTemplate,
) -> tuple[list[tuple[ModelVerdict, LabelScores]], StageClock]:
    """The model's raw verdict and label scores per claim, in claim order."""
    clock = StageClock("verify")
    claims = evidence.claimset.claims
    if not claims:
        return [], clock
    claim_list = numbered([c.text for c in claims])
    if evidence.passages:
        rendered = prompt.render(evidence=render_evidence(evidence.passages), claims=claim_list)
    else:
        rendered = closed_book_prompt.render(claims=claim_list)
    schema = schema_for(VerifyOutput)
    # One verdict per claim, no more and no fewer: the grammar enforces the count.
    schema["properties"]["verdicts"]["minItems"] = len(claims)
    schema["properties"]["verdicts"]["maxItems"] = len(claims)
    generation = await model.generate(rendered, VerifyOutput, max_tokens=72 * len(claims) + 16, schema=schema)
    clock.add(generation)
    scores = list(generation.label_scores) + [UNIFORM] * len(claims)
    return list(zip(generation.output.verdicts, scores)), clock


def decide(
    evidence: Evidence,
    judged: Sequence[tuple[ModelVerdict, LabelScores]],
    calibration: VerifyCalibration,
    timings: tuple[StageTiming, ...] = (),
) -> TurnVerdict:
    """Final per-claim labels from the model's judgement and the signals; Algorithm 1 for the turn."""
    passages = evidence.passages
    verdicts: list[ClaimVerdict] = []
    for claim, (raw, model_scores) in zip(evidence.claimset.claims, judged):
        signals = claim_signals(claim.text, passages)
        scores = calibration.combine(features(model_scores, signals))
        label = scores.best()
        cited = (passages[signals.best_passage].passage_id,) if signals.best_passage is not None else ()
        why = raw.why if raw.label == label else f"{raw.why} (the model alone said {raw.label.value})"
        verdicts.append(
            ClaimVerdict(
                claim_id=claim.claim_id,
                claim_index=claim.index,
                claim_text=claim.text,
                label=label,
                confidence=scores.of(label),
                model_scores=model_scores,
                scores=scores,
                justification=truncate(why, 1000),
                signals=signals.notes[:16],
                cited_passages=cited,
                closed_book=not passages,
            )
        )
    return TurnVerdict(
        verdict_id=derive_id("verdict", evidence.claimset.conversation_id, evidence.claimset.turn_id),
        evidence=evidence,
        claim_verdicts=tuple(verdicts),
        label=aggregate([v.label for v in verdicts]),
        timings=timings,
    )


async def verify(
    evidence: Evidence,
    model: ModelRunner,
    prompt: PromptTemplate,
    closed_book_prompt: PromptTemplate,
    calibration: VerifyCalibration,
) -> TurnVerdict:
    judged, clock = await judge(evidence, model, prompt, closed_book_prompt)
    return decide(evidence, judged, calibration, (clock.stop(),))
