"""The evaluation harness: the same stage functions as the stream, over the benchmark files.

AVeriTeC: each claim is an assistant turn whose evidence is the claim's own
question/answer pairs (CAAFC's setting without retrieval). DiaHalu: every
assistant turn of a dialogue is checked with the dialogue so far as context,
closed-book (DiaHalu ships no evidence; every verdict is marked so), and the
dialogue counts as a hallucination when any turn is false.

Two baselines run on the same rows: the majority class, and the model alone
(one verify call on the whole, unsegmented text, taking the model's own label;
no segmentation, no signals, no Algorithm 1 over atomic claims).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import orjson

from agents.errors import InputError, ModelError
from agents.evaluation.datasets import ClaimCase, DialogueCase, GroundedCase
from agents.evaluation.metrics import Metrics, classification_metrics, deciding_verdict, percentile
from agents.evaluation.provenance import judge_digest, prompt_digest
from agents.evidence.passages import assemble_evidence, is_grounded
from agents.scoring.calibration import VerifyCalibration, cross_validated_fit, with_swap_rate
from agents.scoring.selective import (
    SelectiveFit,
    SelectiveRow,
    SelectiveSummary,
    selective_features,
    summarize_selective,
)
from agents.scoring.sufficiency import SufficiencyRater
from agents.stages.justify import justify
from agents.stages.pipeline import Pipeline
from agents.stages.segment import claimset_for, segment
from agents.stages.sufficiency import assess_sufficiency, rater_inputs
from agents.stages.verify import Judgement, claim_features, decide, judge
from schemas import (
    ClaimSet,
    ClaimSufficiency,
    ContextLine,
    DialogueLabel,
    Evidence,
    Label,
    Passage,
    RecordError,
    Role,
    StageTiming,
    Turn,
    from_dict,
)


@dataclass(frozen=True)
class JudgedTurn:
    """Everything the model said about one turn: enough to re-decide it under another calibration."""

    evidence: Evidence
    judgements: tuple[Judgement, ...]
    sufficiency: tuple[ClaimSufficiency, ...] = ()


@dataclass
class CaseResult:
    case_id: str
    position: int  # line order in the input file; even positions fit the shipped calibration
    gold: str
    predicted: str = ""
    model_alone: str = ""
    claims: int = 0
    fingract: list[int] = field(default_factory=list)
    # Kept to re-decide labels under another calibration without running the model again.
    judged: list[JudgedTurn] = field(default_factory=list)
    whole: list[JudgedTurn] = field(default_factory=list)  # the unsegmented turn, for the model-alone baseline


FAILED = "error"


@dataclass
class EvalRun:
    dataset: str
    labels: tuple[str, ...]
    cases: list[CaseResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    timings: dict[str, list[StageTiming]] = field(default_factory=lambda: defaultdict(list))
    seconds: float = 0.0
    calibration: str = ""
    # Of the prompts behind the judgements (see agents.evaluation.provenance), and the model that answered
    # them (ModelConfig.name); "" for files saved before they were kept.
    prompt_digest: str = ""
    model: str = ""
    nli_model: str = ""  # the evidence cross-encoder's name (NliRunner.name); "" before it was used
    judge_digest: str = ""  # of the judge prompts behind the judge letters; "" without letters, or before it was kept


class Progress:
    """A one-line progress bar on stderr."""

    def __init__(self, total: int, label: str, stream: Any = sys.stderr):
        self.total, self.label, self.stream = total, label, stream
        self.started = time.perf_counter()
        self.done = 0

    def step(self) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        filled = int(30 * self.done / max(self.total, 1))
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}"
            f" {elapsed:5.0f}s elapsed, ~{eta:4.0f}s left"
        )
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def whole_claim_set(turn: Turn, context: Sequence[ContextLine] = ()) -> ClaimSet:
    """The turn as one unsegmented claim: what the model-alone baseline judges."""
    return claimset_for(turn, context, [turn.text], id_suffix="-whole")


async def _check_turn(
    pipeline: Pipeline,
    run: EvalRun,
    result: CaseResult,
    turn: Turn,
    context: Sequence[ContextLine],
    passages: Sequence[Passage],
) -> tuple[Label, Label]:
    """Pipeline label and model-alone label for one turn; records timings and the raw judgements."""
    p = pipeline.prompts
    claimset = await segment(turn, context, pipeline.model, p.segment, pipeline.parser, pipeline.nli, judge=pipeline.judge)
    evidence = assemble_evidence(claimset, passages)
    judged, clock = await judge(evidence, pipeline.model, pipeline.nli, p.verify, pipeline.judge)
    sufficiency, sufficiency_timing = assess_sufficiency(evidence, [j.fit for j in judged], pipeline.sufficiency)
    # No abstention here: accuracy is measured on every row, like the baselines; the selective
    # metrics are computed from the same judgements by selective_rows.
    verdict = decide(evidence, judged, pipeline.calibration, sufficiency, None, (clock.stop(),))
    correction = await justify(verdict, pipeline.model, p.justify, pipeline.max_rounds)
    for timing in claimset.timings + (sufficiency_timing,) + verdict.timings + (correction.timings if correction else ()):
        run.timings[timing.stage].append(timing)
    result.claims += len(claimset.claims)
    result.judged.append(JudgedTurn(evidence, tuple(judged), sufficiency))
    if correction is not None:
        result.fingract.append(correction.score.total)

    whole = assemble_evidence(whole_claim_set(turn, context), passages)
    if [c.text for c in claimset.claims] == [whole.claimset.claims[0].text]:
        # The turn is one atomic claim: the same prompt, so the (deterministic) model's answer is known.
        whole_judged = judged
    else:
        whole_judged, whole_clock = await judge(whole, pipeline.model, pipeline.nli, p.verify, pipeline.judge)
        run.timings["model_alone"].append(whole_clock.stop())
    result.whole.append(JudgedTurn(whole, tuple(whole_judged)))
    return verdict.label, whole_judged[0].verdict.label


C = TypeVar("C")


async def _run_cases(
    run: EvalRun,
    cases: Sequence[tuple[CaseResult, C]],
    check: Callable[[CaseResult, C], Awaitable[tuple[str, str]]],
    pipeline: Pipeline,
    show_progress: bool,
) -> EvalRun:
    """Fill each case's pipeline and model-alone labels from ``check``; a model failure fails that case only."""
    progress = Progress(len(cases), run.dataset) if show_progress else None
    started = time.perf_counter()
    for result, case in cases:
        try:
            result.predicted, result.model_alone = await check(result, case)
        except ModelError as exc:
            _failed(run, result, exc)
        run.cases.append(result)
        if progress:
            progress.step()
    run.seconds = time.perf_counter() - started
    run.prompt_digest = prompt_digest(run.cases, pipeline.prompts.verify)
    run.judge_digest = judge_digest(run.cases, pipeline.judge_prompts)
    run.model = pipeline.model.config.name
    run.nli_model = pipeline.nli.name
    return run


ClaimCheck = Callable[[Pipeline, EvalRun, CaseResult, ClaimCase], Awaitable[tuple[Label, Label]]]


async def _evaluate_claims(
    dataset: str, cases: Sequence[ClaimCase], pipeline: Pipeline, check: ClaimCheck, show_progress: bool
) -> EvalRun:
    """Claim-level rows: ``check`` gives the pipeline's and the model-alone label of each."""
    run = EvalRun(dataset=dataset, labels=tuple(label.value for label in Label), calibration=pipeline.calibration.source)

    async def labels(result: CaseResult, case: ClaimCase) -> tuple[str, str]:
        predicted, alone = await check(pipeline, run, result, case)
        return predicted.value, alone.value

    rows = [(CaseResult(case_id=c.case_id, position=i, gold=c.label.value), c) for i, c in enumerate(cases)]
    return await _run_cases(run, rows, labels, pipeline, show_progress)


async def _check_claim(pipeline: Pipeline, run: EvalRun, result: CaseResult, case: ClaimCase) -> tuple[Label, Label]:
    return await _check_turn(pipeline, run, result, case.turn, (), case.passages)


async def _check_atomic_claim(pipeline: Pipeline, run: EvalRun, result: CaseResult, case: ClaimCase) -> tuple[Label, Label]:
    evidence = assemble_evidence(whole_claim_set(case.turn), case.passages)
    judged, clock = await judge(evidence, pipeline.model, pipeline.nli, pipeline.prompts.verify, pipeline.judge)
    verdict = decide(evidence, judged, pipeline.calibration, (), None, (clock.stop(),))
    run.timings["verify"].extend(verdict.timings)
    result.claims = 1
    result.judged.append(JudgedTurn(evidence, tuple(judged)))
    result.whole.append(JudgedTurn(evidence, tuple(judged)))
    return verdict.label, judged[0].verdict.label


async def evaluate_averitec(cases: Sequence[ClaimCase], pipeline: Pipeline, show_progress: bool = True) -> EvalRun:
    return await _evaluate_claims("averitec", cases, pipeline, _check_claim, show_progress)


async def evaluate_atomic(cases: Sequence[ClaimCase], pipeline: Pipeline, show_progress: bool = True) -> EvalRun:
    """Atomic claims with known labels (:mod:`agents.evaluation.atomic_claims`): one verify call each, no segmenting.

    The claims are single facts by construction, so the pipeline's label is the calibrated verdict
    on the claim as given, and the model-alone baseline is the model's own label in the same call.
    """
    return await _evaluate_claims("atomic", cases, pipeline, _check_atomic_claim, show_progress)


def _failed(run: EvalRun, result: CaseResult, exc: Exception) -> None:
    """A row the model failed on counts as wrong for every system: nothing is guessed for it."""
    result.predicted = result.model_alone = FAILED
    result.judged.clear()
    run.errors.append(f"{result.case_id}: {exc}")


async def evaluate_diahalu(cases: Sequence[DialogueCase], pipeline: Pipeline, show_progress: bool = True) -> EvalRun:
    run = EvalRun(dataset="diahalu", labels=tuple(DialogueLabel),
                  calibration=pipeline.calibration.for_evidence(grounded=False, closed_book=True).source)

    async def labels(result: CaseResult, case: DialogueCase) -> tuple[str, str]:
        context: list[ContextLine] = []
        any_false = alone_false = False
        for turn in case.turns:
            if turn.role is Role.ASSISTANT:
                predicted, alone = await _check_turn(pipeline, run, result, turn, context, ())
                any_false |= predicted is Label.FALSE
                alone_false |= alone is Label.FALSE
            context.append(ContextLine(role=turn.role, text=turn.text[:2000]))
        return DialogueLabel.of(any_false), DialogueLabel.of(alone_false)

    rows = [(CaseResult(case_id=c.case_id, position=i, gold=DialogueLabel.of(c.hallucination)), c) for i, c in enumerate(cases)]
    return await _run_cases(run, rows, labels, pipeline, show_progress)


def grounded_prediction(label: Label) -> DialogueLabel:
    """A knowledge-grounded turn is a hallucination when its verdict is not true: with the knowledge given,
    an answer it does not support (unverifiable) is as ungrounded as one it contradicts (false)."""
    return DialogueLabel.of(label is not Label.TRUE)


async def evaluate_halueval(
    cases: Sequence[GroundedCase], pipeline: Pipeline, show_progress: bool = True, dataset: str = "halueval"
) -> EvalRun:
    """HaluEval turns: each answer after its question (or dialogue history), with the knowledge as evidence.
    ``dataset`` names rows of the same shape from elsewhere (one of :data:`GROUNDED_QA`)."""
    run = EvalRun(dataset=dataset, labels=tuple(DialogueLabel),
                  calibration=pipeline.calibration.for_evidence(grounded=True).source)

    async def labels(result: CaseResult, case: GroundedCase) -> tuple[str, str]:
        predicted, alone = await _check_turn(pipeline, run, result, case.turn, case.context, case.passages)
        return grounded_prediction(predicted), grounded_prediction(alone)

    rows = [(CaseResult(case_id=c.case_id, position=c.row, gold=DialogueLabel.of(c.hallucination)), c) for c in cases]
    return await _run_cases(run, rows, labels, pipeline, show_progress)


def save_judgements(run: EvalRun, path: Path) -> None:
    """Write what the model said on every row, so calibrations can be refitted without the model."""
    data = {"dataset": run.dataset, "labels": run.labels, "seconds": run.seconds, "errors": run.errors,
            "prompt_digest": run.prompt_digest, "model": run.model, "nli_model": run.nli_model,
            "judge_digest": run.judge_digest, "cases": run.cases}
    path.write_bytes(orjson.dumps(data))


def load_judgements(path: Path) -> EvalRun:
    try:
        data = orjson.loads(path.read_bytes())
        run = EvalRun(dataset=data["dataset"], labels=tuple(data["labels"]), seconds=data["seconds"], errors=data["errors"],
                      prompt_digest=data.get("prompt_digest", ""), model=data.get("model", ""),
                      nli_model=data.get("nli_model", ""), judge_digest=data.get("judge_digest", ""))
        for c in data["cases"]:
            run.cases.append(CaseResult(
                case_id=c["case_id"], position=c["position"], gold=c["gold"], predicted=c["predicted"],
                model_alone=c["model_alone"], claims=c["claims"], fingract=c["fingract"],
                judged=[from_dict(JudgedTurn, t) for t in c["judged"]],
                whole=[from_dict(JudgedTurn, t) for t in c["whole"]],
            ))
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, RecordError) as exc:
        raise InputError(f"cannot read judgements {path} ({exc}): write them with `halluwatch eval ... --save-judgements`") from None
    return run


def whole_features(case: CaseResult, judge: str | None = None) -> list[tuple[float, ...]]:
    """Calibration features of the unsegmented turn(s) of a case (with ``judge``: its letters for the model's)."""
    return [claim_features(t.evidence, t.evidence.claimset.claims[0], t.judgements[0], judge)[2] for t in case.whole]


def fitting_rows(dataset: str, case: CaseResult, judge: str | None = None) -> list[tuple[tuple[float, ...], Label]]:
    """A case's rows for fitting the calibration, as the pipeline will see them when it decides.

    HaluEval: the claims the turn was segmented into (a bare answer becomes "Question? Answer."), whose
    features differ from the bare answer's; all of a factual turn's claims are true, and a hallucinated
    turn counts only when it made one claim (which of several is the made-up one is not known).
    The other datasets label a claim, which is judged as given: the unsegmented text.
    With ``judge``, the rows carry that judge's letters where the model's label scores stand.
    """
    label = claim_label(dataset, case.gold)
    if dataset not in GROUNDED_QA:
        return [(row, label) for row in whole_features(case, judge)]
    rows = []
    for t in case.judged:
        if label is Label.FALSE and len(t.judgements) != 1:
            continue
        rows += [(claim_features(t.evidence, claim, j, judge)[2], label)
                 for claim, j in zip(t.evidence.claimset.claims, t.judgements)]
    return rows


def selective_rows(run: EvalRun, calibration: VerifyCalibration, rater: SufficiencyRater) -> list[SelectiveRow]:
    """One row per judged case: the deciding verdict's selective features and whether the case came out right.

    Odd positions are held out, as for the verifier calibration. The sufficiency of each claim's evidence is
    rated again by ``rater`` from the saved judgement (files saved before session 23 hold the Gemma model's
    ratings, which the stage no longer asks for).
    """
    rows = []
    for case in run.cases:
        if case.predicted == FAILED:
            continue
        verdicts = [decide(t.evidence, t.judgements, calibration, rated(t, rater)) for t in case.judged]
        claim_verdicts = [v for verdict in verdicts for v in verdict.claim_verdicts]
        deciding = deciding_verdict(claim_verdicts)
        if deciding is None:
            continue  # nothing was claimed: nothing to abstain on
        turn = next(t for t, verdict in zip(case.judged, verdicts) if deciding in verdict.claim_verdicts)
        labels = [verdict.label for verdict in verdicts]
        predicted, flagged = case_prediction(run.dataset, labels), Label.FALSE in labels
        gold_false = case.gold in (DialogueLabel.HALLUCINATION, Label.FALSE.value)
        check = deciding.sufficiency
        features = selective_features(
            check, deciding.confidence, deciding.fit, turn.evidence.passages, turn.evidence.claimset.claim_date,
            deciding.claim_text,
        )
        rows.append(SelectiveRow(features, predicted == case.gold, flagged, gold_false, case.position % 2 == 1))
    return rows


def sufficiency_rows(run: EvalRun, held_out: bool = False) -> list[tuple[tuple[float, ...], bool]]:
    """(the sufficiency rater's features, whether the evidence settled the claim) for every claim with
    evidence of the even rows (the odd ones with ``held_out``). The evidence settled a claim whose gold label
    is true or false; a grounded answer's own document always settles it; an unverifiable claim's did not."""
    rows = []
    for case in run.cases:
        if case.position % 2 != held_out or case.predicted == FAILED:
            continue
        settled = run.dataset in GROUNDED_QA or case.gold != Label.UNVERIFIABLE.value
        for turn in case.judged:
            if not turn.evidence.passages:
                continue
            for claim, judgement in zip(turn.evidence.claimset.claims, turn.judgements):
                rows.append((rater_inputs(turn.evidence, claim, judgement.fit)[1], settled))
    return rows


def rated(turn: JudgedTurn, rater: SufficiencyRater) -> tuple[ClaimSufficiency, ...]:
    """The sufficiency of a saved turn's evidence, as the stage rates it today."""
    return assess_sufficiency(turn.evidence, [j.fit for j in turn.judgements], rater)[0]


def case_prediction(dataset: str, labels: Sequence[Label]) -> str:
    """A case's predicted label from the verdicts of its turns, in the dataset's own vocabulary."""
    if dataset == "diahalu":
        return DialogueLabel.of(Label.FALSE in labels)
    if dataset in GROUNDED_QA:
        return grounded_prediction(labels[0])
    return labels[0].value


def decided_labels(run: EvalRun, calibration: VerifyCalibration) -> list[str]:
    """Each case's label under another calibration, from the recorded judgements (failed rows stay failed)."""
    labels = []
    for case in run.cases:
        if case.predicted == FAILED:
            labels.append(FAILED)
            continue
        verdicts = [decide(t.evidence, t.judgements, calibration, t.sufficiency).label for t in case.judged]
        labels.append(case_prediction(run.dataset, verdicts))
    return labels


def redecide(run: EvalRun, calibration: VerifyCalibration) -> None:
    """Recompute the pipeline's labels under another calibration, from the recorded judgements."""
    for case, label in zip(run.cases, decided_labels(run, calibration)):
        case.predicted = label
    closed_book = all(not t.evidence.passages for case in run.cases for t in case.judged)
    run.calibration = calibration.for_evidence(grounded_run(run), closed_book).source


# Datasets the verifier calibration is fitted on: AVeriTeC and the atomic claims are labelled per claim;
# HaluEval per turn, but its turns are short answers (about one claim each), so the whole turn stands for
# its claim: factual -> true, hallucination -> false.
# Rows in HaluEval QA's shape (knowledge, question, a right and a made-up answer), checked against the
# knowledge: HaluEval QA itself, and the bundled hand-written set whose answers reword the knowledge
# (PARAPHRASE_FILE), where HaluEval's right answers are spans copied from it.
GROUNDED_QA = ("halueval", "paraphrase")
PARAPHRASE_FILE = Path(__file__).parent / "examples" / "grounded_paraphrase.jsonl"
FITTABLE = ("averitec", "atomic", *GROUNDED_QA)
# Datasets whose rows are split even (fit) / odd (held-out), so a held-out figure is reported.
SPLIT_ROWS = FITTABLE
# Figures published on HaluEval's dialogue set (accuracy), as reference points: not measured here.
HALUEVAL_REFERENCES = (("ChatGPT (HaluEval paper)", 0.738), ("CAAFC, Gemma 3 27B", 0.770))


def claim_label(dataset: str, gold: str) -> Label:
    """A case's gold label as a verdict label, for fitting the verifier calibration."""
    if dataset in GROUNDED_QA:
        return Label.FALSE if gold == DialogueLabel.HALLUCINATION else Label.TRUE
    return Label(gold)


def fit_calibration(
    runs: Sequence[EvalRun], origin: str = "dev-public.jsonl", judge: str | None = None
) -> VerifyCalibration:
    """Fit on the even positions' features of every run; odd positions stay held out.

    Runs whose evidence is the turn's own documents (HaluEval's knowledge) make the grounded fit, the
    others (AVeriTeC, the atomic claims) the fit for retrieved evidence; with both, the second carries the
    first (see :class:`~agents.scoring.calibration.VerifyCalibration`). With ``judge``, the fit for retrieved
    evidence reads that judge's letters in place of the model's label scores (the judge does not read a turn's
    own documents), and says so, and carries the same fit without the letters for claims that have no evidence
    (the judge does not read those).
    """
    parts: dict[bool, list[EvalRun]] = {}
    for run in runs:
        if run.dataset not in FITTABLE:
            raise InputError(f"a calibration is fitted on {', '.join(FITTABLE)} rows, not {run.dataset}")
        parts.setdefault(grounded_run(run), []).append(run)
    fits = {grounded: _fit_part(part, grounded, origin, None if grounded else judge)
            for grounded, part in parts.items()}
    if judge and False in parts:
        fits[False] = replace(fits[False], closed_book=_fit_part(parts[False], False, origin, None))
    if len(fits) == 1:
        return next(iter(fits.values()))
    return replace(fits[False], grounded=fits[True])


def grounded_run(run: EvalRun) -> bool:
    """Whether a run's turns were checked against their own documents (all judged evidence grounded)."""
    return all(is_grounded(t.evidence.passages) for case in run.cases for t in case.judged)


def _fit_part(runs: Sequence[EvalRun], grounded: bool, origin: str, judge: str | None) -> VerifyCalibration:
    rows, labels = [], []
    for run in runs:
        for case in run.cases:
            if case.position % 2 == 0 and case.predicted != FAILED:
                for row, label in fitting_rows(run.dataset, case, judge):
                    rows.append(row)
                    labels.append(label)
    described = " and ".join(
        f"{r.dataset} ({len(r.cases)} rows of {PARAPHRASE_FILE.name if r.dataset == 'paraphrase' else origin})"
        for r in runs)
    kind = "turns checked against their own documents" if grounded else "claims checked against retrieved evidence"
    source = f"{kind}: fitted on the even rows of {described}"
    if judge:
        source += f", with the judge {judge}'s letters"
    return replace(with_swap_rate(cross_validated_fit(rows, labels, source=source), rows, labels), judge=judge)


@dataclass(frozen=True)
class SystemScore:
    """One system's figures on all rows and on the held-out (odd) rows, where the dataset is split."""

    name: str
    all_rows: Metrics
    held_out: Metrics | None


@dataclass(frozen=True)
class Report:
    dataset: str
    rows: int
    failed_rows: list[str]
    calibration: str
    pipeline: Metrics
    model_alone: Metrics
    majority: Metrics
    majority_label: str
    held_out: Metrics | None  # odd positions only (not used to fit the shipped calibration)
    stage_seconds: dict[str, dict[str, float]]
    model_seconds: float
    total_seconds: float
    mean_fingract: float | None
    closed_book: bool
    predictions: list[dict[str, Any]]
    selective: SelectiveSummary | None = None  # all rows
    selective_held_out: SelectiveSummary | None = None  # odd rows only
    # The pipeline (trained and untrained verifier), the model alone and the majority class, side by side.
    systems: tuple[SystemScore, ...] = ()


def compare_systems(run: EvalRun, calibration: VerifyCalibration | None = None) -> tuple[SystemScore, ...]:
    """The pipeline as run, the same judgements decided by the base model alone (no fitted calibration),
    the model alone on the unsegmented turn, and the majority class (of the even rows, on held-out rows).
    When ``calibration`` reads a judge's letters, also the same judgements decided without the judge (the
    shipped calibration), so the judge's part can be read off one report."""
    split = run.dataset in SPLIT_ROWS
    gold = [c.gold for c in run.cases]
    fitting = [c.gold for c in run.cases if c.position % 2 == 0] or gold
    predicted = {
        "pipeline": [c.predicted for c in run.cases],
        "pipeline, base model (untrained)": decided_labels(run, VerifyCalibration.identity()),
        "model alone (no pipeline)": [c.model_alone for c in run.cases],
    }
    if calibration is not None and calibration.judge is not None:
        predicted[f"pipeline without the judge {calibration.judge}"] = decided_labels(run, VerifyCalibration.load())
    systems = []
    for name, labels in predicted.items():
        held = [(g, p) for c, g, p in zip(run.cases, gold, labels) if c.position % 2 == 1]
        systems.append(SystemScore(
            name, classification_metrics(gold, labels, run.labels),
            classification_metrics([g for g, _ in held], [p for _, p in held], run.labels) if split and held else None,
        ))
    overall, even = Counter(gold).most_common(1)[0][0], Counter(fitting).most_common(1)[0][0]
    held_gold = [c.gold for c in run.cases if c.position % 2 == 1]
    systems.append(SystemScore(
        f"majority ({overall}; held-out: {even})" if split else f"majority ({overall})",
        classification_metrics(gold, [overall] * len(gold), run.labels),
        classification_metrics(held_gold, [even] * len(held_gold), run.labels) if split and held_gold else None,
    ))
    return tuple(systems)


def build_report(run: EvalRun, selective: SelectiveFit | None = None, calibration: VerifyCalibration | None = None,
                 rater: SufficiencyRater | None = None) -> Report:
    """The report of a run; the selective figures need ``selective``, ``calibration`` and ``rater``."""
    gold = [c.gold for c in run.cases]
    majority_label = Counter(gold).most_common(1)[0][0] if gold else run.labels[0]
    held = [c for c in run.cases if c.position % 2 == 1]
    stage_seconds = {
        stage: {
            "calls": float(len(items)),
            "median": statistics.median(t.seconds for t in items),
            "p95": percentile([t.seconds for t in items], 0.95),
            "mean_model": statistics.fmean(t.model_seconds for t in items),
        }
        for stage, items in run.timings.items()
        if items
    }
    scores = [s for c in run.cases for s in c.fingract]
    rows = selective_rows(run, calibration, rater) if selective and calibration and rater else []
    return Report(
        selective=summarize_selective(rows, selective) if rows and selective else None,
        selective_held_out=summarize_selective([r for r in rows if r.held_out], selective) if rows and selective else None,
        dataset=run.dataset,
        rows=len(run.cases),
        failed_rows=run.errors,
        calibration=run.calibration,
        pipeline=classification_metrics(gold, [c.predicted for c in run.cases], run.labels),
        model_alone=classification_metrics(gold, [c.model_alone for c in run.cases], run.labels),
        majority=classification_metrics(gold, [majority_label] * len(gold), run.labels),
        majority_label=majority_label,
        held_out=classification_metrics([c.gold for c in held], [c.predicted for c in held], run.labels)
        if run.dataset in SPLIT_ROWS and held
        else None,
        stage_seconds=stage_seconds,
        model_seconds=sum(t.model_seconds for items in run.timings.values() for t in items),
        total_seconds=run.seconds,
        mean_fingract=statistics.fmean(scores) if scores else None,
        closed_book=run.dataset == "diahalu",
        systems=compare_systems(run, calibration) if run.cases else (),
        predictions=[
            {
                "id": c.case_id, "position": c.position, "gold": c.gold, "predicted": c.predicted,
                "model_alone": c.model_alone, "claims": c.claims,
                # Features of the unsegmented text, to refit a calibration without running the model.
                "whole_features": [list(f) for f in whole_features(c)],
            }
            for c in run.cases
        ],
    )


def format_report(report: Report) -> str:
    lines = [f"{report.dataset}: {report.rows} rows, calibration: {report.calibration}"]
    if report.failed_rows:
        lines.append(f"{len(report.failed_rows)} rows failed in the model and count as wrong, e.g. {report.failed_rows[0]}")
    if report.closed_book:
        lines.append("closed-book: no evidence in this dataset; verdicts come from the model's own knowledge")
    header = f"{'system':<44}{'accuracy':>9}{'macro-F1':>10}{'held-out acc':>14}{'held-out F1':>13}"
    lines += ["", header, "-" * len(header)]
    for system in report.systems:
        held = system.held_out
        tail = f"{held.accuracy:>14.3f}{held.macro_f1:>13.3f}" if held is not None else f"{'-':>14}{'-':>13}"
        lines.append(f"{system.name:<44}{system.all_rows.accuracy:>9.3f}{system.all_rows.macro_f1:>10.3f}{tail}")
    if any(s.held_out is not None for s in report.systems):
        lines.append("held-out: the odd rows, never used to fit the shipped calibration")
    if report.dataset == "halueval":
        lines.append("reported elsewhere on HaluEval dialogue (accuracy):")
        lines += [f"  {name:<26}{accuracy:>9.3f}" for name, accuracy in HALUEVAL_REFERENCES]
        lines.append("a turn counts as a hallucination when its verdict is not true (false or unverifiable)")
    lines += ["", "pipeline per class:", f"{'label':<16}{'P':>7}{'R':>7}{'F1':>7}{'n':>6}"]
    for label, c in report.pipeline.per_class.items():
        lines.append(f"{label:<16}{c.precision:>7.3f}{c.recall:>7.3f}{c.f1:>7.3f}{c.support:>6}")
    lines += ["", "confusion (rows gold, columns predicted): " + " / ".join(report.pipeline.labels)]
    for label, row in zip(report.pipeline.labels, report.pipeline.confusion):
        lines.append(f"{label:<16}" + "".join(f"{v:>7}" for v in row))
    if report.stage_seconds:
        lines += ["", f"{'stage':<14}{'calls':>7}{'median s':>10}{'p95 s':>8}{'model s':>9}"]
    for stage, s in report.stage_seconds.items():
        lines.append(f"{stage:<14}{int(s['calls']):>7}{s['median']:>10.3f}{s['p95']:>8.3f}{s['mean_model']:>9.3f}")
    for name, summary in (("all rows", report.selective), ("held-out rows", report.selective_held_out)):
        if summary is not None:
            if name == "all rows":
                lines += ["", f"selective verdicts (threshold {summary.threshold:.3f}):",
                          f"{'rows':<16}{'n':>5}{'coverage':>10}{'sel. acc':>10}{'alert P':>9}{'alert R':>9}{'area':>7}{'area w/o suff.':>16}"]
            lines.append(f"{name:<16}{summary.rows:>5}{summary.coverage:>10.3f}{summary.selective_accuracy:>10.3f}"
                         f"{summary.alert_precision:>9.3f}{summary.alert_recall:>9.3f}{summary.auc:>7.3f}{summary.auc_without_sufficiency:>16.3f}")
    if report.mean_fingract is not None:
        lines.append(f"\nmean FinGrAct score of corrections: {report.mean_fingract:.2f} / 7")
    if report.stage_seconds:
        lines.append(f"total {report.total_seconds:.0f}s, of which model {report.model_seconds:.0f}s")
    else:
        lines.append("re-decided from saved judgements: the timings are those of the run that saved them")
    return "\n".join(lines)

