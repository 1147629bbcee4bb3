"""``halluwatch eval``: the stages over a benchmark file, with baselines and per-stage timing."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict
from pathlib import Path

from agents.errors import InputError
from agents.evaluation.atomic_claims import read_atomic
from agents.evaluation.datasets import read_averitec, read_diahalu, read_halueval
from agents.evaluation.harness import (
    FITTABLE,
    GROUNDED_QA,
    PARAPHRASE_FILE,
    EvalRun,
    build_report,
    evaluate_atomic,
    evaluate_averitec,
    evaluate_diahalu,
    evaluate_halueval,
    fit_calibration,
    format_report,
    load_judgements,
    redecide,
    save_judgements,
)
from agents.evaluation.injection import Case, with_reply_suffix
from agents.evaluation.provenance import judge_staleness, other_encoder, other_model, staleness
from agents.evaluation.rejudge import changed_cases, splice
from agents.evaluation.segmentation import (
    TurnKey,
    claim_drift,
    dialogue_turns,
    evaluate_segmentation,
    format_segmentation,
)
from agents.evaluation.source_hints import evaluate_source_hints, format_source_hints
from agents.model.judge import judge_templates
from agents.model.nli import NLI_MODEL
from agents.model.runner import ModelRunner
from agents.scoring.selective import DEFAULT_PATH as SELECTIVE_PATH
from agents.scoring.selective import SelectiveFit
from agents.stages.pipeline import Pipeline
from agents.stages.verify import VerifyPrompts
from agents.testing.recorded_backend import RecordedBackend, RecordingBackend
from stream.build import build_pipeline
from stream.commands.common import dump_json
from stream.settings import Settings


async def run_stages(args: argparse.Namespace, pipeline: Pipeline) -> EvalRun:
    return await judge_file(args.dataset, args.file, pipeline, not args.quiet, args.limit, args.append_to_reply,
                            args.glued)


async def judge_file(dataset: str, file: Path, pipeline: Pipeline, progress: bool, limit: int | None = None,
                     suffix: str | None = None, glued: bool = False) -> EvalRun:
    """The stages over one benchmark file's rows (every reply ending with ``suffix`` when given)."""
    async with pipeline.model:
        return await judge_rows(dataset, file, pipeline, progress, limit, suffix, glued)


async def judge_rows(dataset: str, file: Path, pipeline: Pipeline, progress: bool, limit: int | None = None,
                     suffix: str | None = None, glued: bool = False, only: Collection[str] | None = None) -> EvalRun:
    """:func:`judge_file` with the model already loaded, over the rows whose case ids are in ``only`` (all
    when None)."""
    def cases(read: Callable[[Path, int | None], Sequence[Case]]) -> Sequence[Case]:
        rows = read(file, limit)
        if only is not None:
            rows = [row for row in rows if row.case_id in only]
        return with_reply_suffix(rows, suffix, glued) if suffix else rows

    if dataset == "averitec":
        return await evaluate_averitec(cases(read_averitec), pipeline, progress)
    if dataset == "atomic":
        return await evaluate_atomic(cases(read_atomic), pipeline, progress)
    if dataset in GROUNDED_QA:
        return await evaluate_halueval(cases(read_halueval), pipeline, progress, dataset)
    return await evaluate_diahalu(cases(read_diahalu), pipeline, progress)


async def rejudge_changed(args: argparse.Namespace, pipeline: Pipeline, saved: EvalRun) -> EvalRun:
    """``saved`` with the cases whose claims segmentation now makes differently judged again by the model."""
    made: dict[TurnKey, list[str]] = {}
    async with pipeline.model:
        await evaluate_segmentation(dialogue_turns(args.file, args.limit), pipeline.model, pipeline.prompts.segment,
                                    pipeline.parser, pipeline.nli, args.file.name, not args.quiet, made, pipeline.judge)
        changed = changed_cases(saved.cases, made)
        print(f"{len(changed)} of {len(saved.cases)} cases have other claims today; judging them again"
              + (f": {', '.join(changed[:10])}{' ...' if len(changed) > 10 else ''}" if changed else ""))
        if not changed:
            return saved
        fresh = await judge_rows(args.dataset, args.file, pipeline, not args.quiet, args.limit, only=set(changed))
    return splice(saved, fresh, pipeline.prompts.verify, pipeline.judge_prompts)


def segment_model(args: argparse.Namespace, settings: Settings) -> tuple[ModelRunner | None, RecordingBackend | None]:
    """The model for a run that replays the segment answers of ``--answers`` (None: the usual model).

    With ``--save-answers``, or where other prompts than segmentation's need answers, what the recording
    lacks runs the model; without, an answer never recorded is an error."""
    known = RecordedBackend.load(args.answers) if args.answers else None
    if args.save_answers or (known is not None and args.dataset != "segmentation"):
        from agents.model.llama_backend import LlamaBackend  # the native library only when a model runs

        recording = RecordingBackend(lambda: LlamaBackend(settings.model), known)
        return ModelRunner(settings.model, backend=recording), recording
    if known is not None:
        return ModelRunner(settings.model, backend=known), None
    return None, None


async def run_segmentation_eval(args: argparse.Namespace, settings: Settings) -> int:
    model, recording = segment_model(args, settings)
    pipeline = build_pipeline(settings, model=model)
    items = dialogue_turns(args.file, args.limit)
    saved = load_checked_judgements(args.judgements, pipeline.prompts.verify, settings.model.name) if args.judgements else None
    made: dict[TurnKey, list[str]] = {}
    async with pipeline.model:
        report = await evaluate_segmentation(
            items, pipeline.model, pipeline.prompts.segment, pipeline.parser, pipeline.nli, args.file.name,
            not args.quiet, made, pipeline.judge
        )
    print(format_segmentation(report))
    drift: list[str] = []
    if saved is not None:
        drift = claim_drift(saved.cases, made)
        print(f"\nclaims of {args.judgements}: {len(drift)} turns differ from what segmentation makes of them now"
              + (": judge them again (`eval ... --save-judgements`)" if drift else ""))
        for line in drift[:20]:
            print(f"  - {line}")
    if recording is not None:
        recording.save(args.save_answers)
        print(f"wrote {len(recording.answers)} segment answers to {args.save_answers}"
              f" ({recording.model_calls} from the model)")
    if args.out:
        args.out.write_text(dump_json({**vars(report), "claims_per_turn": report.claims_per_turn,
                                       "unresolved_share": report.unresolved_share,
                                       "factual_without_claim_share": report.factual_without_claim_share}))
        print(f"wrote {args.out}")
    return 1 if drift else 0


async def run_source_hints_eval(args: argparse.Namespace, settings: Settings) -> int:
    pipeline = build_pipeline(settings)
    cases = read_averitec(args.file, args.limit)
    async with pipeline.model:
        report = await evaluate_source_hints(cases, pipeline.model, pipeline.prompts.sources, not args.quiet)
    print(format_source_hints(report))
    if args.out:
        args.out.write_text(dump_json(asdict(report)))
        print(f"wrote {args.out}")
    return 0


def load_checked_judgements(path: Path, prompts: VerifyPrompts, model: str) -> EvalRun:
    """Saved judgements, with a warning on stderr when they were made from other prompts than today's or by
    another model than ``model``: figures from them would then describe code or a model that is not in use."""
    run = load_judgements(path)
    rerun = f"run the model again with --save-judgements {path}"
    # The encoder's scores alone can be added in minutes, without running the model again.
    rescore = f"add them with `python docs/research/nli-evidence/add_scores.py {path}` (minutes), or {rerun}"
    # So can the judge's letters (both its readings of each claim it read).
    reread = f"read them again with `python docs/research/qwen-profile/add_judge_scores.py qwen-1.5b {path}`"
    checks = ((staleness(run.prompt_digest, run.cases, prompts), rerun), (other_model(run.model, model), rerun),
              (other_encoder(run.nli_model, NLI_MODEL), rescore),
              (judge_staleness(run.judge_digest, run.cases, judge_templates()), reread))
    for why, fix in checks:
        if why is not None:
            print(f"warning: {path} may be stale: {why}; {fix}", file=sys.stderr)
    return run


async def run_eval(args: argparse.Namespace, settings: Settings) -> int:
    if args.file is None:
        if args.dataset != "paraphrase":
            raise InputError(f"eval {args.dataset} needs a file: halluwatch eval {args.dataset} FILE"
                             " (the public sets are under ../shared/data)")
        args.file = PARAPHRASE_FILE
    if args.dataset == "segmentation":
        return await run_segmentation_eval(args, settings)
    if args.save_answers or args.answers and not args.rejudge_changed:
        raise InputError("--answers and --save-answers keep the segment model's answers: use them with segmentation"
                         " (or --answers with --rejudge-changed)")
    if args.rejudge_changed and not args.judgements:
        raise InputError("--rejudge-changed judges again the saved cases whose claims changed: give --judgements FILE")
    if args.dataset == "source-hints":
        return await run_source_hints_eval(args, settings)
    if args.append_to_reply and (args.judgements or args.fit_calibration):
        raise InputError("--append-to-reply changes what the model reads: run the model (no --judgements) and"
                         " do not fit a calibration on the altered rows")
    if args.glued and not args.append_to_reply:
        raise InputError("--glued says how to join --append-to-reply's text to the reply: give --append-to-reply TEXT too")
    if args.fit_calibration and args.dataset not in FITTABLE:
        raise InputError(f"--fit-calibration needs rows a verdict can be fitted on: use it with {', '.join(FITTABLE)}")
    if args.fit_with and not args.fit_calibration:
        raise InputError("--fit-with adds rows to a fit: give --fit-calibration OUT too")
    pipeline = build_pipeline(settings, model=segment_model(args, settings)[0])
    also = [load_checked_judgements(path, pipeline.prompts.verify, settings.model.name) for path in args.fit_with]
    if args.judgements:
        # Re-decide saved judgements under the current calibration: no model run (but for --rejudge-changed).
        run = load_checked_judgements(args.judgements, pipeline.prompts.verify, settings.model.name)
        if run.dataset != args.dataset:
            raise InputError(f"{args.judgements} holds {run.dataset} judgements, not {args.dataset}")
        if args.rejudge_changed:
            run = await rejudge_changed(args, pipeline, run)
        redecide(run, pipeline.calibration)
    else:
        run = await run_stages(args, pipeline)
    if args.save_judgements:
        save_judgements(run, args.save_judgements)
        print(f"wrote the model's judgements to {args.save_judgements}")
    if not run.cases:
        raise InputError(f"{args.file} has no rows to evaluate")
    calibration = pipeline.calibration
    if args.fit_calibration:
        calibration = fit_calibration([run, *also], origin=args.file.name, judge=settings.judge)
        calibration.save(args.fit_calibration)
        redecide(run, calibration)
        print(f"wrote calibration to {args.fit_calibration}")
    report = build_report(run, SelectiveFit.load(settings.selective_path or SELECTIVE_PATH), calibration,
                          pipeline.sufficiency)
    if args.append_to_reply:
        joined = "glued to its last words" if args.glued else "as a sentence of its own"
        print(f"every checked reply ended with {args.append_to_reply!r}, {joined}")
    print(format_report(report))
    if args.out:
        args.out.write_text(dump_json(report))
        print(f"wrote {args.out}")
    return 0
