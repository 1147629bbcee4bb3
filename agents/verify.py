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

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.calibration import FEATURE_NAMES, VerifyCalibration
from agents.evidence import render_evidence
from agents.llm import Generation, ModelRunner, Prompt, TokenScore
from agents.prompting import PromptTemplate
from agents.selective import SelectiveModel, selective_features
from agents.sufficiency import assess_sufficiency
from agents.sources import numbered
from agents.text import (
    clauses, content_words, coverage, names, names_in, numbers, same_number, truncate, value_names, years,
)
from agents.timing import StageClock
from schemas import ClaimSufficiency, ClaimVerdict, Evidence, EvidenceFit, Label, LabelScores, Passage, StageTiming, TurnVerdict, derive_id
from schemas.generate import schema_with_items

UNIFORM = LabelScores(true=1 / 3, false=1 / 3, unverifiable=1 / 3)
_WORD_PIECE = re.compile(r"[^\W_]")
_NEGATION = re.compile(r"\b(not|no|never|none|nobody|neither|nor|n't|cannot|false|denied|deny|denies)\b", re.I)


@dataclass(frozen=True)
class ModelVerdict:
    label: Label
    why: str = field(metadata={"max_length": 120})


@dataclass(frozen=True)
class VerifyOutput:
    verdicts: tuple[ModelVerdict, ...] = field(metadata={"max_items": 32})


@dataclass(frozen=True)
class VerifyPrompts:
    """The prompts the verify stage uses: with evidence, closed-book, and the sufficiency autorater."""

    with_evidence: PromptTemplate
    closed_book: PromptTemplate
    sufficiency: PromptTemplate

    @classmethod
    def load(cls) -> VerifyPrompts:
        return cls(*(PromptTemplate.load(n) for n in ("verify", "verify_closed_book", "sufficiency")))


@dataclass(frozen=True)
class Judgement:
    """What the model said about one claim, before calibration."""

    verdict: ModelVerdict
    scores: LabelScores  # its probability mass on each label
    fit: EvidenceFit
    # The model's label scores at this claim's position on a content-free input with as many claims
    # (see position_priors), and at the first position; None: no correction.
    prior: LabelScores | None = None
    first_prior: LabelScores | None = None

    def debiased(self) -> LabelScores:
        """The label scores with the position bias divided out, on the scale of a first claim.

        Contextual calibration: the small model labels later claims of a list by their position
        (measured: "false" for the second claim whatever it says); dividing by what it says at that
        position about "N/A" and multiplying by what it says at the first position removes that.
        """
        if self.prior is None or self.first_prior is None:
            return self.scores
        raw = {label: self.scores.of(label) / max(self.prior.of(label), 1e-6) * self.first_prior.of(label) for label in Label}
        total = sum(raw.values()) or 1.0
        return LabelScores(**{label.value: raw[label] / total for label in Label})


def aggregate(labels: Sequence[Label]) -> Label:
    """CAAFC Algorithm 1: any false -> false; else any unverifiable -> unverifiable; else true.

    A turn with no claims has nothing false in it and is true.
    """
    if Label.FALSE in labels:
        return Label.FALSE
    if Label.UNVERIFIABLE in labels:
        return Label.UNVERIFIABLE
    return Label.TRUE


@dataclass(frozen=True)
class Signals:
    """Cheap claim-vs-evidence signals; ``notes`` explain them to a person."""

    values: tuple[float, ...]
    notes: tuple[str, ...]
    best_passage: int | None  # index into the passages, the one sharing most words with the claim
    swap: ValueSwap | None = None  # a passage sentence restating the claim with another value


@dataclass(frozen=True)
class ValueSwap:
    """A passage sentence that restates the claim with another value where the claim has one of its own."""

    passage: int  # index into the passages
    overlap: float  # share of the claim's content words the sentence has
    claimed: tuple[str, ...]  # the claim's values the sentence lacks
    stated: tuple[str, ...]  # the sentence's values of the same kind the claim lacks
    sentence: str = ""  # the sentence (or clause) itself


# A restatement with a swapped value differs in one or two values (a first and last name); a sentence that
# differs in more says something else, and pairing its values with the claim's is guesswork.
MAX_SWAPPED = 2


def unmatched_values(claim: str, sentence: str) -> list[tuple[list[str], list[str]]]:
    """Per kind of value (names, years, other numbers): the claim's values the sentence lacks, and the
    sentence's values the claim lacks. Only values of one kind are ever paired."""
    pairs = [([n for n in value_names(claim) if not names_in(sentence, n)],
              [n for n in value_names(sentence) if not names_in(claim, n)])]
    claim_years, sentence_years = years(claim), years(sentence)
    for ours, theirs in ((claim_years, sentence_years), (numbers(claim) - claim_years, numbers(sentence) - sentence_years)):
        pairs.append(([n for n in ours if not any(same_number(n, m) for m in theirs)],
                      [m for m in theirs if not any(same_number(m, n) for n in ours)]))
    return pairs


def value_swap(claim: str, passages: Sequence[Passage], min_overlap: float = 0.5) -> ValueSwap | None:
    """The closest passage sentence (or clause) that says the same as the claim with another name or number.

    "The Amazon flows into the Pacific" against "The Amazon discharges into the Atlantic": the
    sentence shares most of the claim's words, and where the claim names one ocean it names
    another. Questions are skipped (AVeriTeC's evidence asks before it answers); numbers that
    agree once rounded count as the same, and names that differ only in spelling or form; only
    values of one kind are paired (a name against a name, a year against a year); and a sentence
    that differs from the claim in more than two values of a kind is not a restatement.
    """
    claim_words = content_words(claim)
    if not claim_words or not (value_names(claim) or numbers(claim)):
        return None
    found: ValueSwap | None = None
    for index, passage in enumerate(passages):
        for sentence in clauses(passage.text):
            if sentence.endswith("?"):
                continue
            overlap = coverage(claim_words, content_words(sentence))
            if overlap < min_overlap or (found is not None and overlap <= found.overlap):
                continue
            for claimed, stated in unmatched_values(claim, sentence):
                if claimed and stated and len(claimed) <= MAX_SWAPPED and len(stated) <= MAX_SWAPPED:
                    found = ValueSwap(index, overlap, tuple(sorted(claimed)), tuple(sorted(stated)), sentence)
                    break
    return found


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
    swap = value_swap(claim, passages)
    if swap is not None:
        notes.append(f"[{swap.passage + 1}] says {', '.join(swap.stated)} where the claim says {', '.join(swap.claimed)}")
    if passages and best_overlap < 0.2:
        notes.append("little word overlap with any passage")

    values = (
        best_overlap,
        coverage(claim_words, all_words) if passages else 0.0,
        number_conflict,
        number_match,
        name_conflict,
        negation_mismatch,
        swap.overlap if swap is not None else 0.0,
        float(not passages),
        math.log1p(len(passages)),
    )
    assert len(values) + 6 == len(FEATURE_NAMES)
    return Signals(values=values, notes=tuple(notes), best_passage=best, swap=swap)


def evidence_fit(tokens: Sequence[TokenScore]) -> EvidenceFit:
    """Summarise how well the evidence predicted a claim's word tokens.

    The tiny model cannot say "false" reliably, but as a language model it still
    predicts a claim's words much better when the evidence states them (copying
    is what small models do well), and at a swapped name or number the evidence's
    own token gets far more probability than the claim's. The first token is
    skipped: it mostly measures how claims start, not what they say.
    """
    scored = [t for t in tokens[1:] if _WORD_PIECE.search(t.piece)]
    if not scored:
        return EvidenceFit(mean_logprob=0.0, min_logprob=0.0, contradiction=0.0, weakest="")
    weakest = min(scored, key=lambda t: t.logprob)
    gaps = [t.best_alternative - t.logprob for t in scored if math.isfinite(t.best_alternative)]
    return EvidenceFit(
        mean_logprob=round(sum(t.logprob for t in scored) / len(scored), 4),
        min_logprob=round(weakest.logprob, 4),
        contradiction=round(max([0.0, *gaps]), 4),
        weakest=truncate(weakest.piece.strip(), 100),
    )


def features(model_scores: LabelScores, signals: Signals, fit: EvidenceFit) -> tuple[float, ...]:
    fitted = (fit.mean_logprob, fit.min_logprob, fit.contradiction)
    return tuple(model_scores.of(label) for label in Label) + signals.values + fitted


CONTENT_FREE = "N/A"


async def ask_verdicts(model: ModelRunner, prompt: Prompt, count: int) -> Generation[VerifyOutput]:
    """One model call for ``count`` claims; the grammar enforces one verdict per claim, no more, no fewer."""
    return await model.generate(
        prompt, VerifyOutput, max_tokens=72 * count + 16, schema=schema_with_items(VerifyOutput, "verdicts", count)
    )


async def position_priors(model: ModelRunner, prompts: VerifyPrompts, count: int, with_evidence: bool) -> tuple[LabelScores, ...]:
    """The model's label scores at each of ``count`` positions for content-free claims and evidence.

    Computed once per (prompt, count) and kept on the runner: it depends only on the model and prompt.
    """
    key = ("verify-position-priors", with_evidence, count)
    if key not in model.memo:
        claims = numbered([CONTENT_FREE] * count)
        if with_evidence:
            rendered = prompts.with_evidence.render(evidence=f"[1] undated {CONTENT_FREE}", claims=claims)
        else:
            rendered = prompts.closed_book.render(claims=claims)
        generation = await ask_verdicts(model, rendered, count)
        model.memo[key] = tuple(generation.label_scores) + (UNIFORM,) * (count - len(generation.label_scores))
    return model.memo[key]


async def judge(
    evidence: Evidence,
    model: ModelRunner,
    prompts: VerifyPrompts,
) -> tuple[list[Judgement], StageClock]:
    """The model's raw verdict, label scores and evidence fit per claim, in claim order."""
    clock = StageClock("verify")
    claims = evidence.claimset.claims
    if not claims:
        return [], clock
    claim_list = numbered([c.text for c in claims])
    rendered_evidence = render_evidence(evidence.passages)
    if evidence.passages:
        rendered = prompts.with_evidence.render(evidence=rendered_evidence, claims=claim_list)
    else:
        rendered = prompts.closed_book.render(claims=claim_list)
    # While reading the prompt, the runner scores each claim's tokens given the evidence before it
    # (closed-book: given the model's own knowledge); see evidence_fit.
    rendered = dataclasses.replace(rendered, scored=tuple(" " + c.text for c in claims), reference=rendered_evidence if evidence.passages else "")
    generation = await ask_verdicts(model, rendered, len(claims))
    clock.add(generation)
    scores = list(generation.label_scores) + [UNIFORM] * len(claims)
    priors = await position_priors(model, prompts, len(claims), bool(evidence.passages))
    return [
        Judgement(verdict=v, scores=s, fit=evidence_fit(t), prior=prior, first_prior=priors[0])
        for v, s, t, prior in zip(generation.output.verdicts, scores, generation.token_scores, priors)
    ], clock


def decide(
    evidence: Evidence,
    judged: Sequence[Judgement],
    calibration: VerifyCalibration,
    sufficiency: Sequence[ClaimSufficiency] = (),
    selective: SelectiveModel | None = None,
    timings: tuple[StageTiming, ...] = (),
) -> TurnVerdict:
    """Final per-claim labels from the model's judgement and the signals; Algorithm 1 for the turn.

    With a selective model, a verdict whose estimated chance of being right is below its
    threshold abstains: it becomes unverifiable, so it raises no alert.
    """
    passages = evidence.passages
    verdicts: list[ClaimVerdict] = []
    checks = {s.claim_id: s for s in sufficiency}
    for claim, judgement in zip(evidence.claimset.claims, judged):
        raw, model_scores = judgement.verdict, judgement.scores
        signals = claim_signals(claim.text, passages)
        adjusted = judgement.debiased()
        scores = calibration.combine(features(adjusted, signals, judgement.fit))
        cited_index = signals.best_passage
        if signals.swap is not None:
            scores = calibration.after_value_swap(scores)
            cited_index = signals.swap.passage  # the passage that says otherwise is the one to cite
        label = scores.best()
        cited = (passages[cited_index].passage_id,) if cited_index is not None else ()
        why = raw.why if raw.label == label else f"{raw.why} (the model alone said {raw.label.value})"
        check = checks.get(claim.claim_id)
        selective_score = None
        abstained_from = None
        if selective is not None:
            values = selective_features(
                check, scores.of(label), judgement.fit, passages, evidence.claimset.claim_date, claim.text
            )
            selective_score = round(selective.score(values), 6)
            if selective_score < selective.threshold and label is not Label.UNVERIFIABLE:
                abstained_from, label = label, Label.UNVERIFIABLE
                why = f"abstained: {why} (selective score {selective_score:.2f} < {selective.threshold:.2f})"
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
                fit=judgement.fit,
                adjusted_scores=adjusted,
                sufficiency=check,
                selective_score=selective_score,
                abstained=abstained_from is not None,
                abstained_from=abstained_from,
            )
        )
    return TurnVerdict(
        verdict_id=derive_id("verdict", evidence.claimset.conversation_id, evidence.claimset.turn_id),
        evidence=evidence,
        claim_verdicts=tuple(verdicts),
        label=aggregate([v.label for v in verdicts]),
        timings=timings,
    )


def recorded_judgements(verdict: TurnVerdict) -> list[Judgement]:
    """The model's judgements as a verdict record keeps them: enough to decide the turn again."""
    return [
        Judgement(
            ModelVerdict(v.model_scores.best(), v.justification[:120]),
            v.adjusted_scores or v.model_scores,  # already without the position bias
            v.fit or EvidenceFit(mean_logprob=0.0, min_logprob=0.0, contradiction=0.0, weakest=""),
        )
        for v in verdict.claim_verdicts
    ]


def redecide_verdict(verdict: TurnVerdict, calibration: VerifyCalibration, selective: SelectiveModel | None) -> TurnVerdict:
    """The same turn decided under another calibration or threshold, without running the model."""
    checks = [v.sufficiency for v in verdict.claim_verdicts if v.sufficiency is not None]
    return decide(verdict.evidence, recorded_judgements(verdict), calibration, checks, selective, verdict.timings)


async def verify(
    evidence: Evidence,
    model: ModelRunner,
    prompts: VerifyPrompts,
    calibration: VerifyCalibration,
    selective: SelectiveModel | None = None,
) -> TurnVerdict:
    """Sufficiency, then the model's judgement, then the calibrated and selective decision."""
    sufficiency, sufficiency_timing = await assess_sufficiency(evidence, model, prompts.sufficiency)
    judged, clock = await judge(evidence, model, prompts)
    return decide(evidence, judged, calibration, sufficiency, selective, (sufficiency_timing, clock.stop()))
