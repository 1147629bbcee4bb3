"""Stage 6, justify: an actionable correction for every turn that is not true.

For each false claim the model rewrites the claim from the evidence it cites
(a claim that restates another, :mod:`agents.stages.restatements`, counts once);
the justification names every error, gives its correction and cites the
passage by URL and date. FinGrAct then scores the result (error detection
0-2, correction 0-2, links 0-3). The score is computed by code against the
evidence, not by asking the model: a correction counts only if the words it
changes appear in the passage it cites, and a link counts as supportive only
then. While the score is below 4 of 7, the feedback (what is missing or
unsupported) goes back to the model for a revision, at most ``max_rounds``
times; a round that is acceptable but leaves a false claim without a
supported correction is revised too. Every round is kept on the record and
the best-scoring round is the result.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.evidence.passages import PASSAGE_CHARS
from agents.model.prompting import PromptTemplate
from agents.model.runner import ModelRunner
from agents.model.timing import StageClock
from agents.scoring.signals import value_swap
from agents.stages.restatements import one_per_group
from agents.text import content_words, coverage, curly_quotes, straight_quotes, truncate, words
from schemas import (
    Citation,
    ClaimVerdict,
    ContextLine,
    Correction,
    ErrorFix,
    FinGrActScore,
    JustificationRound,
    Label,
    Passage,
    TurnVerdict,
    ids,
)
from schemas.generate import schema_for

ACCEPT_AT = 4
# One passage per attempt, the most relevant first: the small model cannot choose among several (it
# copied an unrelated passage that shared a name); a correction that fails the check moves to the next.
CANDIDATE_PASSAGES = 1
# A passage sharing less than this share of the claim's words does not address the claim.
MIN_RELEVANCE = 0.3
# A correction keeps most of the claim's words and changes only what is wrong.
MIN_KEPT = 0.4


@dataclass(frozen=True)
class CorrectionOutput:
    corrected: str = field(metadata={"min_length": 1, "max_length": 240})
    evidence: int = field(metadata={"minimum": 1, "maximum": CANDIDATE_PASSAGES})


def citation(p: Passage) -> Citation:
    return Citation(passage_id=p.passage_id, url=p.url, title=p.title, published_at=p.published_at)


def candidate_passages(claim: str, passages: Sequence[Passage], skip: int = 0) -> list[Passage]:
    """The passages sharing most words with the claim, best first (``skip`` moves to the next ones)."""
    words = content_words(claim)
    relevance = {p.passage_id: coverage(words, content_words(p.text)) for p in passages}
    ranked = sorted((p for p in passages if relevance[p.passage_id] >= MIN_RELEVANCE), key=lambda p: -relevance[p.passage_id])
    return ranked[skip : skip + CANDIDATE_PASSAGES] or ranked[:CANDIDATE_PASSAGES]


def changed_words(claim: str, corrected: str) -> set[str]:
    return content_words(corrected) - content_words(claim)


def correction_supported(fix: ErrorFix, passages: dict[str, Passage]) -> bool:
    """The correction keeps the claim's subject, changes it, every word it adds is in a cited passage, and
    the cited passages do not contradict it in turn (adding a date but keeping Aldrin fixes nothing)."""
    added = changed_words(fix.claim_text, fix.correction)
    if not fix.correction or not added:
        return False
    if coverage(content_words(fix.claim_text), content_words(fix.correction)) < MIN_KEPT:
        return False
    cited = [passages[c.passage_id] for c in fix.citations if c.passage_id in passages]
    cited_words = set().union(*(content_words(p.text) for p in cited))
    return added <= cited_words and value_swap(fix.correction, cited) is None


def score_fingract(
    justification: str, fixes: Sequence[ErrorFix], unverifiable: Sequence[ClaimVerdict], passages: Sequence[Passage]
) -> tuple[FinGrActScore, str]:
    """FinGrAct by code: the score and the feedback that says what to improve."""
    by_id = {p.passage_id: p for p in passages}
    feedback: list[str] = []

    problems = [f.claim_text for f in fixes] + [v.claim_text for v in unverifiable]
    named = [text for text in problems if text in justification]
    detection = 0 if not named else (2 if len(named) == len(problems) else 1)
    for text in problems:
        if text not in justification:
            feedback.append(f"name the error in '{text}'")

    supported = [f for f in fixes if correction_supported(f, by_id)]
    if not fixes:
        correction = 2  # nothing false to correct
    else:
        correction = 0 if not supported else (2 if len(supported) == len(fixes) else 1)
    for f in fixes:
        if f not in supported:
            feedback.append(f"the correction of '{f.claim_text}' must change it using words from the cited evidence")

    cited = [c for f in fixes for c in f.citations] or [
        citation(by_id[pid]) for v in unverifiable for pid in v.cited_passages if pid in by_id
    ]
    if not cited:
        links = 0
        feedback.append("cite the passages that support the corrections")
    elif not all(c.url.startswith(("http://", "https://")) for c in cited):
        links = 0
        feedback.append("cited sources need working http(s) links")
    else:
        relevant = all(
            coverage(content_words(f.claim_text), content_words(by_id[c.passage_id].text)) >= MIN_RELEVANCE
            for f in fixes
            for c in f.citations
            if c.passage_id in by_id
        )
        links = 1 if not relevant else (3 if fixes and len(supported) == len(fixes) else 2)
        if links < 3 and fixes:
            feedback.append("cite passages that state the corrected facts")
    total = detection + correction + links
    score = FinGrActScore(
        error_detection=detection, correction=correction, links=links, total=total, acceptable=total >= ACCEPT_AT
    )
    return score, "; ".join(feedback)


def apply_corrections(turn_text: str, fixes: Sequence[ErrorFix]) -> str:
    """The turn with each wrong span replaced by its correction, or the correction appended.

    Only words the correction changes are replaced. A span it merely extends keeps its words ("Moon" ->
    "Moon, on 20 July 1969") and adds detail the turn may already give in words the claim left out ("...
    the Moon, in 1969."): splicing it in would say the date twice.
    """
    text = turn_text
    for fix in fixes:
        if not fix.correction:
            continue
        old_words, new_words = fix.claim_text.rstrip(".").split(), fix.correction.rstrip(".").split()
        applied = False
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old_words, b=new_words).get_opcodes():
            old, new = " ".join(old_words[i1:i2]), " ".join(new_words[j1:j2])
            if tag == "replace" and set(words(old)) <= set(words(new)):
                continue  # an addition, not a fix
            if tag == "replace" and old and old in text:
                text = text.replace(old, new, 1)
                applied = True
        if not applied:
            text = f"{text} [Correction: {fix.correction}]"
    return text


def compose_justification(fixes: Sequence[ErrorFix], unverifiable: Sequence[ClaimVerdict]) -> str:
    parts: list[str] = []
    for fix in fixes:
        sources = ", ".join(f"{c.url} ({c.published_at or 'undated'})" for c in fix.citations) or "no source"
        parts.append(f"False: '{fix.claim_text}'. Correct: '{fix.correction}' [source: {sources}].")
    for v in unverifiable:
        parts.append(f"Unverified: '{v.claim_text}': {v.justification}")
    return truncate(" ".join(parts), 4000)


@functools.cache
def correction_schema(candidates: int) -> dict[str, Any]:
    """The rewrite's output schema with the evidence index limited to 1..``candidates``; built once per count
    and shared (callers only read it)."""
    schema = schema_for(CorrectionOutput)
    # An enum, not a maximum: the grammar enforces enums, while llama.cpp's converter ignores integer bounds
    # (measured: the 270M model wrote "evidence": 1953 and the row failed).
    schema["properties"]["evidence"] = {"type": "integer", "enum": list(range(1, candidates + 1))}
    return schema


async def _correct(
    claim: ClaimVerdict,
    passages: Sequence[Passage],
    model: ModelRunner,
    prompt: PromptTemplate,
    clock: StageClock,
    round_no: int,
    feedback: str,
    context: Sequence[ContextLine],
) -> ErrorFix:
    candidates = candidate_passages(claim.claim_text, passages, skip=round_no % 2)
    if not candidates:
        return ErrorFix(claim_id=claim.claim_id, claim_text=claim.claim_text, label=claim.label, correction="", citations=())
    lines = "\n".join(
        f"Evidence [{i}] {p.published_at or 'undated'} {truncate(' '.join(p.text.split()), PASSAGE_CHARS)}"
        for i, p in enumerate(candidates, start=1)
    )
    if feedback:
        lines += f"\nReviewer: {truncate(feedback, 300)}"
    # Typographic quotes, as in the segment stage: a straight one copied into the JSON answer would end it.
    generation = await model.generate(
        prompt.render(claim=curly_quotes(claim.claim_text), evidence=curly_quotes(lines)), CorrectionOutput,
        schema=correction_schema(len(candidates)),
    )
    clock.add(generation)
    chosen = candidates[min(generation.output.evidence, len(candidates)) - 1]
    corrected = " ".join(straight_quotes(generation.output.corrected).split())
    # Only the reply's own values can be wrong: a bare answer's claim carries the user's question, whose
    # names the evidence may spell otherwise ("Ken Loach" / "Kenneth Loach"), as in the verify stage.
    swap = value_swap(claim.claim_text, passages, context=context)
    if swap is not None and value_swap(corrected, [chosen], context=context) is not None:
        # The rewrite still says what the evidence contradicts; the evidence's own restatement of the
        # claim is a correct fix by construction, in the cited source's words.
        corrected, chosen = swap.sentence, passages[swap.passage]
    return ErrorFix(
        claim_id=claim.claim_id,
        claim_text=claim.claim_text,
        label=claim.label,
        correction=truncate(corrected, 1000),
        citations=(citation(chosen),),
    )


async def justify(
    verdict: TurnVerdict, model: ModelRunner, prompt: PromptTemplate, max_rounds: int = 2
) -> Correction | None:
    """The correction of a turn that is not true; None for a true turn."""
    if verdict.label is Label.TRUE:
        return None
    clock = StageClock("justify")
    passages = verdict.evidence.passages
    context = verdict.evidence.claimset.context
    # Two wordings of one fact are corrected once, by the stricter verdict: false before unverifiable.
    named = one_per_group(
        [v for label in (Label.FALSE, Label.UNVERIFIABLE) for v in verdict.claim_verdicts if v.label is label],
        verdict.evidence.claimset.claims,
    )
    false_claims = [v for v in named if v.label is Label.FALSE]
    unverifiable = [v for v in named if v.label is Label.UNVERIFIABLE]
    rounds: list[JustificationRound] = []
    feedback = ""
    fixes: list[ErrorFix] = []
    fixes_by_round: list[list[ErrorFix]] = []
    for round_no in range(max_rounds + 1):
        by_id = {f.claim_id: f for f in fixes}
        revised: list[ErrorFix] = []
        for claim in false_claims:
            previous = by_id.get(claim.claim_id)
            if previous is not None and correction_supported(previous, {p.passage_id: p for p in passages}):
                revised.append(previous)  # keep what already passed; revise only the rest
            else:
                revised.append(await _correct(claim, passages, model, prompt, clock, round_no, feedback, context))
        fixes = revised
        fixes_by_round.append(fixes)
        text = compose_justification(fixes, unverifiable)
        score, feedback = score_fingract(text, fixes, unverifiable, passages)
        rounds.append(
            JustificationRound(
                round=round_no,
                justification=text,
                corrected_text=truncate(apply_corrections(verdict.evidence.claimset.turn_text, fixes), 20_000),
                score=score,
                feedback=truncate(feedback, 2000),
            )
        )
        # FinGrAct accepts at 4 of 7; a false claim without a supported correction is still worth
        # another try, because the alert's main job is to give the right fact.
        if not false_claims or (score.acceptable and score.correction == 2):
            break
    best = max(rounds, key=lambda r: (r.score.total, -r.round))
    claimset = verdict.evidence.claimset
    return Correction(
        correction_id=ids.correction_id(claimset.conversation_id, claimset.turn_id),
        conversation_id=claimset.conversation_id,
        turn_id=claimset.turn_id,
        bot=claimset.bot,
        label=verdict.label,
        original_text=claimset.turn_text,
        corrected_text=best.corrected_text,
        justification=best.justification,
        errors=tuple(fixes_by_round[best.round]),
        score=best.score,
        rounds=tuple(rounds),
        timings=(clock.stop(),),
    )
