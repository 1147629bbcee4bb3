"""Stage 5, verify: a label, confidence and justification per claim; Algorithm 1 per turn.

One model call per turn judges all its claims against the evidence (oldest
first), as in CAAFC. The runner reads the model's probability mass on each
label from its token log-probabilities. A small model's raw label scores
barely separate a right from a wrong place name, so the final label combines
them with cheap claim-vs-evidence signals (word overlap, conflicting numbers
and names, negation) in a multinomial logistic model whose weights are fitted
on the benchmark files (:mod:`agents.scoring.calibration`). Both the model's own
scores and the combined scores are kept on every verdict.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.errors import InputError
from agents.evidence.passages import closest_sentence, is_grounded, render_evidence
from agents.model.backend import Prompt, TokenScore
from agents.model.judge import JudgeReading, JudgeRunner
from agents.model.nli import NliRunner, PairScores
from agents.model.prompting import PromptTemplate, numbered
from agents.model.runner import Generation, ModelRunner
from agents.model.timing import StageClock
from agents.scoring.calibration import VerifyCalibration
from agents.scoring.selective import SelectiveModel, selective_features
from agents.scoring.signals import Signals, ValueSwap, claim_signals, features, judge_each_features
from agents.scoring.sufficiency import SufficiencyRater
from agents.stages.instructions import claim_as_read
from agents.stages.sufficiency import assess_sufficiency
from agents.text import truncate
from schemas import (
    Claim,
    ClaimSufficiency,
    ClaimVerdict,
    Evidence,
    EvidenceFit,
    Label,
    LabelScores,
    Passage,
    StageTiming,
    TurnVerdict,
    ids,
)
from schemas.generate import schema_with_items

UNIFORM = LabelScores(true=1 / 3, false=1 / 3, unverifiable=1 / 3)
_WORD_PIECE = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class ModelVerdict:
    label: Label
    why: str = field(metadata={"max_length": 120})


@dataclass(frozen=True)
class VerifyOutput:
    verdicts: tuple[ModelVerdict, ...] = field(metadata={"max_items": 32})


class PositionPriors:
    """The model's label scores at each claim position for content-free claims, per model and prompt.

    They depend only on the model and the prompt, so each (model, with evidence, claim count) is
    asked once and remembered for the life of the prompts (one worker, one eval run).
    """

    def __init__(self) -> None:
        self._known: dict[tuple[object, bool, int], tuple[LabelScores, ...]] = {}

    async def at(self, model: ModelRunner, prompts: VerifyPrompts, count: int, with_evidence: bool) -> tuple[LabelScores, ...]:
        key = (model.config.model_path, with_evidence, count)
        if key not in self._known:
            claims = numbered([CONTENT_FREE] * count)
            if with_evidence:
                rendered = prompts.with_evidence.render(evidence=f"[1] undated {CONTENT_FREE}", claims=claims)
            else:
                rendered = prompts.closed_book.render(claims=claims)
            generation = await ask_verdicts(model, rendered, count)
            self._known[key] = tuple(generation.label_scores) + (UNIFORM,) * (count - len(generation.label_scores))
        return self._known[key]


@dataclass(frozen=True)
class VerifyPrompts:
    """The prompts the verify stage uses: with evidence, and closed-book."""

    with_evidence: PromptTemplate
    closed_book: PromptTemplate
    priors: PositionPriors = field(default_factory=PositionPriors, compare=False, repr=False)

    @classmethod
    def load(cls) -> VerifyPrompts:
        return cls(*(PromptTemplate.load(n) for n in ("verify", "verify_closed_book")))


@dataclass(frozen=True)
class Judgement:
    """What the model said about one claim, before calibration."""

    verdict: ModelVerdict
    scores: LabelScores  # its probability mass on each label
    fit: EvidenceFit
    # The model's label scores at this claim's position on a content-free input with as many claims
    # (see PositionPriors), and at the first position; None: no correction.
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


CONTENT_FREE = "N/A"


async def ask_verdicts(model: ModelRunner, prompt: Prompt, count: int) -> Generation[VerifyOutput]:
    """One model call for ``count`` claims; the grammar enforces one verdict per claim, no more, no fewer."""
    return await model.generate(prompt, VerifyOutput, schema=schema_with_items(VerifyOutput, "verdicts", count))


def verify_prompt(evidence: Evidence, prompts: VerifyPrompts) -> Prompt:
    """The one verify call's prompt for a claim set: with its evidence, or closed-book when it has none."""
    read = [claim_as_read(c) for c in evidence.claimset.claims]
    claim_list = numbered(read)
    rendered_evidence = render_evidence(evidence.passages)
    if evidence.passages:
        rendered = prompts.with_evidence.render(evidence=rendered_evidence, claims=claim_list)
    else:
        rendered = prompts.closed_book.render(claims=claim_list)
    # While reading the prompt, the runner scores each claim's tokens given the evidence before it
    # (closed-book: given the model's own knowledge); see evidence_fit.
    return dataclasses.replace(rendered, scored=tuple(" " + text for text in read),
                               reference=rendered_evidence if evidence.passages else "")


async def judge(
    evidence: Evidence,
    model: ModelRunner,
    nli: NliRunner,
    prompts: VerifyPrompts,
    judge_runner: JudgeRunner | None = None,
) -> tuple[list[Judgement], StageClock]:
    """The model's raw verdict, label scores and evidence fit per claim, in claim order; the fit includes the
    cross-encoder's reading of each claim with the evidence and, with a judge, the judge's letters for a claim
    checked against retrieved evidence (a turn's own documents are left to the model's fit, where the judge
    added nothing, and so is a claim without evidence, where it told nothing: docs/research/qwen-profile)."""
    clock = StageClock("verify")
    claims = evidence.claimset.claims
    if not claims:
        return [], clock
    generation = await ask_verdicts(model, verify_prompt(evidence, prompts), len(claims))
    clock.add(generation)
    scores = list(generation.label_scores) + [UNIFORM] * len(claims)
    priors = await prompts.priors.at(model, prompts, len(claims), bool(evidence.passages))
    # After the model, not beside it: on 2 cores the two slowed each other (llama.cpp's prompt evaluation
    # fell from about 355 to 240 tokens/s) and the verify stage's median rose 0.1 s (halluwatch bench).
    reading = time.perf_counter()
    pairs = await read_pairs(evidence, nli)
    clock.encoder_seconds = time.perf_counter() - reading
    fits = [with_pairs(evidence_fit(t), pair) for t, pair in zip(generation.token_scores, pairs)]
    if judge_runner is not None and judge_reads(evidence):
        asking = time.perf_counter()
        letters = await read_judge(evidence, judge_runner)
        clock.model_seconds += time.perf_counter() - asking
        fits = [with_judge_letters(fit, reading) for fit, reading in zip(fits, letters)]
    return [
        Judgement(verdict=v, scores=s, prior=prior, first_prior=priors[0], fit=fit)
        for v, s, fit, prior in zip(generation.output.verdicts, scores, fits, priors)
    ], clock


async def read_pairs(evidence: Evidence, nli: NliRunner) -> list[PairScores]:
    """The cross-encoder's reading of each claim (as the model reads it) beside the evidence, in claim order."""
    return await nli.score([claim_as_read(c) for c in evidence.claimset.claims], [p.text for p in evidence.passages])


async def read_judge(evidence: Evidence, judge_runner: JudgeRunner) -> list[JudgeReading]:
    """The judge's letters for each claim (as the model reads it) beside the evidence, in claim order."""
    return await judge_runner.scores(*judge_inputs(evidence))


def with_judge_letters(fit: EvidenceFit, reading: JudgeReading | None) -> EvidenceFit:
    """The fit carrying the judge's letters (both readings), or none of them."""
    if reading is None:
        return dataclasses.replace(fit, judge=None, judge_each=None)
    return dataclasses.replace(fit, judge=reading.together, judge_each=reading.each)


def judge_reads(evidence: Evidence) -> bool:
    """Whether the judge reads this evidence's claims: retrieved evidence, not a turn's own documents, not none."""
    return bool(evidence.passages) and not is_grounded(evidence.passages)


def judge_inputs(evidence: Evidence) -> tuple[list[str], list[str]]:
    """What the judge reads of ``evidence``: each claim as the model reads it, and the passages' texts."""
    return [claim_as_read(c) for c in evidence.claimset.claims], [p.text for p in evidence.passages]


def with_pairs(fit: EvidenceFit, pair: PairScores) -> EvidenceFit:
    return dataclasses.replace(fit, nli_forward=pair.forward, nli_backward=pair.backward)


def claim_features(
    evidence: Evidence, claim: Claim, judgement: Judgement, judge: str | None = None
) -> tuple[Signals, LabelScores, tuple[float, ...]]:
    """What the calibration reads for one claim: its signals, the model's debiased scores, and the feature row.

    With ``judge`` (the calibration was fitted on that judge's letters), the row carries the judge's letters
    where the model's label scores stand and, after the other features, its letters beside each passage alone; a
    judgement the judge did not read cannot be decided by that fit."""
    signals = claim_signals(claim_as_read(claim), evidence.passages, evidence.claimset.context)
    adjusted = judgement.debiased()
    if judge is None:
        return signals, adjusted, features(adjusted, signals, judgement.fit)
    fit = judgement.fit
    if fit.judge is None:
        raise InputError(f"the calibration reads the judge {judge}'s letters, but this claim was judged without it:"
                         " set HALLUWATCH_JUDGE (--judge) to it, or give a calibration fitted without a judge")
    if fit.judge_each is None:
        raise InputError(f"the calibration reads the judge {judge}'s letters beside each passage, but this claim was"
                         " read before the judge read passages one by one: judge it again (saved judgements: python"
                         " docs/research/qwen-profile/add_judge_scores.py), or give a calibration fitted without a judge")
    return signals, adjusted, features(fit.judge, signals, fit) + judge_each_features(fit.judge_each)


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
    calibration = calibration.for_evidence(is_grounded(passages), closed_book=not passages)
    verdicts: list[ClaimVerdict] = []
    checks = {s.claim_id: s for s in sufficiency}
    for claim, judgement in zip(evidence.claimset.claims, judged):
        raw, model_scores = judgement.verdict, judgement.scores
        signals, adjusted, row = claim_features(evidence, claim, judgement, calibration.judge)
        scores = calibration.combine(row)
        cited_index = signals.best_passage
        if signals.swap is not None:
            scores = calibration.after_value_swap(scores)
            cited_index = signals.swap.passage  # the passage that says otherwise is the one to cite
        label = scores.best()
        cited = (passages[cited_index].passage_id,) if cited_index is not None else ()
        why = justification(raw, label, claim.text, passages, cited_index, signals.swap)
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
        verdict_id=ids.verdict_id(evidence.claimset.conversation_id, evidence.claimset.turn_id),
        evidence=evidence,
        claim_verdicts=tuple(verdicts),
        label=aggregate([v.label for v in verdicts]),
        timings=timings,
    )


def justification(
    raw: ModelVerdict,
    label: Label,
    claim: str,
    passages: Sequence[Passage],
    cited_index: int | None,
    swap: ValueSwap | None,
) -> str:
    """What a verdict rests on, in words a person can check: the cited passage's own sentence.

    The small model's account of the evidence is not shown where there is evidence: on the public rows it
    gave the passage a number or name the passage does not hold in about a quarter of its reasons ("[1]
    says the bridge opened in 1941" beside a passage that says 1937), mostly the claim's own, and a reason
    that misquotes its source is worse than none. Closed-book, the model's words are all there is.
    """
    if cited_index is None:
        why = raw.why
    else:
        sentence = swap.sentence if swap is not None and swap.sentence else closest_sentence(claim, passages[cited_index])
        why = f'[{cited_index + 1}] says: "{sentence}"'
    return why if raw.label == label else f"{why} (the model alone said {raw.label.value})"


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
    nli: NliRunner,
    prompts: VerifyPrompts,
    calibration: VerifyCalibration,
    rater: SufficiencyRater,
    selective: SelectiveModel | None = None,
    judge_runner: JudgeRunner | None = None,
) -> TurnVerdict:
    """The model's judgement, the sufficiency of the evidence (read off the judgement's signals), then the
    calibrated and selective decision."""
    judged, clock = await judge(evidence, model, nli, prompts, judge_runner)
    verify_timing = clock.stop()
    sufficiency, sufficiency_timing = assess_sufficiency(evidence, [j.fit for j in judged], rater)
    return decide(evidence, judged, calibration, sufficiency, selective, (sufficiency_timing, verify_timing))
