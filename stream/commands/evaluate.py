"""``halluwatch eval``: the stages over a benchmark file, with baselines and per-stage timing."""

from __future__ import annotations

import argparse

from agents.datasets import read_averitec, read_diahalu
from agents.errors import InputError
from agents.evaluation import build_report, evaluate_averitec, evaluate_diahalu, fit_calibration, format_report, redecide
from stream.cli import dump_json
from stream.commands.common import build_pipeline
from stream.settings import Settings


async def run_eval(args: argparse.Namespace, settings: Settings) -> int:
    if args.fit_calibration and args.dataset != "averitec":
        raise InputError("--fit-calibration needs the averitec dataset (claim-level labels)")
    pipeline = build_pipeline(settings)
    try:
        await pipeline.model.load()
        if args.dataset == "averitec":
            run = await evaluate_averitec(read_averitec(args.file, args.limit), pipeline, not args.quiet)
        else:
            run = await evaluate_diahalu(read_diahalu(args.file, args.limit), pipeline, not args.quiet)
    finally:
        await pipeline.model.aclose()
    if not run.cases:
        raise InputError(f"{args.file} has no rows to evaluate")
    if args.fit_calibration:
        calibration = fit_calibration(run, source=f"fitted on even rows of {args.file.name} ({len(run.cases)} rows)")
        calibration.save(args.fit_calibration)
        redecide(run, calibration)
        print(f"wrote calibration to {args.fit_calibration}")
    report = build_report(run)
    print(format_report(report))
    if args.out:
        args.out.write_text(dump_json(report))
        print(f"wrote {args.out}")
    return 0
