"""``halluwatch calibrate``: fit the selective-verdict regression on labelled rows.

Inputs: an AVeriTeC or DiaHalu file (the stages run over it, as in ``eval``),
judgements saved by ``eval --save-judgements``, or a labelled replay report
from ``replay --wait --out`` (the last two need no model). Odd rows
are held out: the regression is fitted on the even rows and the coverage /
accuracy curve, its area and the threshold come from the odd rows only.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agents.errors import InputError
from agents.evaluation.datasets import read_averitec, read_diahalu
from agents.evaluation.harness import (
    EvalRun,
    evaluate_averitec,
    evaluate_diahalu,
    save_judgements,
    selective_rows,
)
from agents.evaluation.replay_scoring import report_selective_rows
from agents.inputs import read_jsonl
from agents.scoring.selective import SelectiveFit, fit_selective, plot_curves
from agents.stages.verify import VerifyPrompts
from stream.build import build_pipeline
from stream.commands.evaluate import load_checked_judgements
from stream.settings import Settings


def detect_format(path: Path) -> str:
    for number, row in read_jsonl(path):
        if "verdict" in row and "conversation_id" in row:
            return "replay"  # a `replay --wait --out` report: labels are checked per row when read
        if "claim" in row and "evidence" in row:
            kind = "averitec"
        elif "turns" in row:
            kind = "diahalu"
        else:
            raise InputError(f"{path}:{number}: neither an AVeriTeC row (claim, evidence) nor a DiaHalu row (turns)")
        if "label" not in row:
            raise InputError(f"{path}:{number}: the row has no label; calibration needs labelled rows")
        return kind
    raise InputError(f"{path} is empty: give a JSONL file of labelled rows")


async def judged_run(args: argparse.Namespace, settings: Settings) -> EvalRun:
    if args.judgements:
        run = load_checked_judgements(args.judgements, VerifyPrompts.load(), settings.model.name)
        require_both_classes([c.gold for c in run.cases], args.judgements)
        return run
    kind = detect_format(args.file)
    if kind == "averitec":
        claims = read_averitec(args.file, args.limit)
        require_both_classes([c.label.value for c in claims], args.file)
    else:
        dialogues = read_diahalu(args.file, args.limit)
        require_both_classes([d.hallucination for d in dialogues], args.file)
    pipeline = build_pipeline(settings)
    async with pipeline.model:
        if kind == "averitec":
            run = await evaluate_averitec(claims, pipeline, not args.quiet)
        else:
            run = await evaluate_diahalu(dialogues, pipeline, not args.quiet)
    if args.save_judgements:
        save_judgements(run, args.save_judgements)
    return run


def require_both_classes(labels: list[object], path: Path) -> None:
    if len(set(labels)) < 2:
        raise InputError(
            f"every row of {path} carries the same label ({labels[0] if labels else 'no rows'}):"
            " calibration needs rows of both right and wrong kinds, so include rows of more than one label"
        )


def format_fit(fit: SelectiveFit) -> str:
    lines = [
        f"fitted on {fit.fitted_rows} rows, tested on {fit.held_out_rows} held-out rows",
        f"area under the coverage/accuracy curve: {fit.auc:.3f} with sufficiency,"
        f" {fit.auc_without_sufficiency:.3f} without",
        "",
        f"{'coverage':>9}{'accuracy':>10}{'alert precision':>17}{'threshold':>11}   (held out, with sufficiency)",
    ]
    shown: set[int] = set()
    for point in fit.model.curve:
        step = round(point.coverage * 10)
        if step not in shown and abs(point.coverage - step / 10) < 0.05:
            shown.add(step)
            lines.append(f"{point.coverage:>9.2f}{point.accuracy:>10.3f}{point.alert_precision:>17.3f}{point.threshold:>11.3f}")
    chosen = min(fit.model.curve, key=lambda p: abs(p.threshold - fit.model.threshold))
    lines.append(
        f"\nthreshold {fit.model.threshold:.3f}: coverage {chosen.coverage:.2f}, selective accuracy {chosen.accuracy:.3f},"
        f" alert precision {chosen.alert_precision:.3f}"
    )
    weights = ", ".join(f"{n} {w:+.2f}" for n, w in zip(fit.model.features, fit.model.weights))
    lines.append(f"weights: {weights}, bias {fit.model.bias:+.2f}")
    return "\n".join(lines)


async def run_calibrate(args: argparse.Namespace, settings: Settings) -> int:
    if args.file is None and args.judgements is None:
        raise InputError("give a labelled data file, or --judgements FILE from `halluwatch eval --save-judgements`")
    # The judgements are collected without abstaining: the model being fitted decides that.
    settings = settings.override(abstain_threshold=0.0)
    if args.file is not None and args.judgements is None and detect_format(args.file) == "replay":
        rows = report_selective_rows(args.file)  # the report carries the verdicts: no model run
        require_both_classes([r.gold_false for r in rows], args.file)
        source = f"fitted on even conversations of replay report {args.file.name} ({len(rows)} conversations)"
    else:
        run = await judged_run(args, settings)
        pipeline = build_pipeline(settings)
        rows = selective_rows(run, pipeline.calibration, pipeline.sufficiency)
        source = f"fitted on even rows of {(args.judgements or args.file).name} ({len(run.cases)} rows)"
    fit = fit_selective(rows, source, args.target_coverage, args.target_precision)
    fit.save(args.out)
    plot = args.plot or args.out.with_suffix(".png")
    plot_curves(fit, plot)
    print(format_fit(fit))
    print(f"\nwrote {args.out} and {plot}")
    return 0
