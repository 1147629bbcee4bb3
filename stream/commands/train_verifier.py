"""``halluwatch train-verifier``: fit the verifier on the even rows of the public sets, report the odd rows.

The shipped verifier is a classifier (multinomial logistic regression,
:mod:`agents.scoring.calibration`) over the model's label probabilities and
the evidence signals of each claim. Its training rows come from HaluEval QA,
the bundled paraphrase set (hand-written rows of HaluEval's shape whose right
answers reword the knowledge instead of copying it), AVeriTeC and the atomic
claims built from AVeriTeC's answers (:mod:`agents.evaluation.atomic_claims`: a
sentence and its evidence, one value swapped, another row's sentence); only even
rows are fitted on. HaluEval and the paraphrase set, whose turns are checked
against their own knowledge passage, make the grounded fit; AVeriTeC and the
atomic claims the fit for retrieved evidence (see
``VerifyCalibration.for_evidence``).

The model's judgements of each file are read from ``--judgements DIR``
(``<kind>-judgements.json``, as ``eval --save-judgements`` writes them) when
there, else made by running the model over the file (kept with
``--save-judgements DIR``). With the judgements in ``docs/results`` this
reproduces ``agents/scoring/verify_calibration.json`` (up to the last bits of a
float, where numpy's summation order differs between CPUs).

The same even rows fit the sufficiency rater (:mod:`agents.scoring.sufficiency`,
written to ``--sufficiency-out``): evidence that settled its claim (gold true or
false, a grounded answer's own document) against evidence that did not (gold
unverifiable); the odd rows' figures are printed after the verifier's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agents.errors import InputError
from agents.evaluation.harness import (
    PARAPHRASE_FILE,
    EvalRun,
    build_report,
    fit_calibration,
    redecide,
    save_judgements,
    sufficiency_rows,
)
from agents.evaluation.metrics import roc_area
from agents.scoring.calibration import VerifyCalibration
from agents.scoring.sufficiency import SufficiencyRater, fit_rater
from agents.stages.verify import VerifyPrompts
from stream.build import build_pipeline
from stream.commands.evaluate import judge_file, load_checked_judgements
from stream.settings import Settings

# (kind, the file it is built from: under the data directory, or bundled with halluwatch)
TRAINING_SETS = (
    ("halueval", Path("halueval-qa/dev-public.jsonl")),
    ("paraphrase", PARAPHRASE_FILE),  # absolute: `args.data / PARAPHRASE_FILE` is PARAPHRASE_FILE
    ("averitec", Path("averitec/dev-public.jsonl")),
    ("atomic", Path("averitec/dev-public.jsonl")),
)


async def judged_runs(args: argparse.Namespace, settings: Settings) -> list[EvalRun]:
    runs = []
    for kind, relative in TRAINING_SETS:
        saved = args.judgements / f"{kind}-judgements.json" if args.judgements else None
        if saved is not None and saved.exists():
            run = load_checked_judgements(saved, VerifyPrompts.load(), settings.model.name)
            if run.dataset != kind:
                raise InputError(f"{saved} holds {run.dataset} judgements, not {kind}: name each file <kind>-judgements.json")
            print(f"{kind}: the model's judgements of {len(run.cases)} rows from {saved}", flush=True)
        else:
            file = args.data / relative
            if not file.exists():
                raise InputError(f"{file} is missing: give --data the folder holding {relative}"
                                 " (or --judgements a folder of saved judgements)")
            print(f"{kind}: running the model over {file}", flush=True)
            run = await judge_file(kind, file, build_pipeline(settings), not args.quiet)
            if args.save_judgements:
                args.save_judgements.mkdir(parents=True, exist_ok=True)
                save_judgements(run, args.save_judgements / f"{kind}-judgements.json")
        runs.append(run)
    return runs


def format_training(runs: list[EvalRun], fitted: VerifyCalibration) -> str:
    """Each run's odd rows, decided (see ``redecide``) under ``fitted``."""
    lines = [f"{'set (odd rows, never fitted on)':<34}{'system':<40}{'accuracy':>9}{'macro-F1':>10}"]
    for run in runs:
        for system in build_report(run, calibration=fitted).systems:
            if system.held_out is not None:
                lines.append(f"{run.dataset:<34}{system.name:<40}{system.held_out.accuracy:>9.3f}"
                             f"{system.held_out.macro_f1:>10.3f}")
    return "\n".join(lines)


def format_sufficiency(runs: list[EvalRun], rater: SufficiencyRater) -> str:
    """Each run's odd rows under the rater: how many settling claims it calls sufficient and, where the run
    has claims whose evidence settles nothing, how well it ranks the two apart."""
    lines = [f"{'sufficiency (odd rows)':<34}{'claims':>7}{'settled called sufficient':>27}{'AUC':>7}"]
    for run in runs:
        rows = sufficiency_rows(run, held_out=True)
        settled = [rater.probability(features) for features, ok in rows if ok]
        unsettled = [rater.probability(features) for features, ok in rows if not ok]
        share = sum(p >= 0.5 for p in settled) / len(settled) if settled else 0.0
        area = f"{roc_area(settled, unsettled):>7.3f}" if settled and unsettled else f"{'-':>7}"
        lines.append(f"{run.dataset:<34}{len(rows):>7}{share:>27.2f}{area}")
    return "\n".join(lines)


async def run_train_verifier(args: argparse.Namespace, settings: Settings) -> int:
    runs = await judged_runs(args, settings)
    fitted = fit_calibration(runs, judge=settings.judge)
    fitted.save(args.out)
    rows = [row for run in runs for row in sufficiency_rows(run)]
    rater = fit_rater(rows, f"fitted on the even rows of {', '.join(run.dataset for run in runs)}: {len(rows)} claims,"
                            f" {sum(not ok for _, ok in rows)} whose evidence settled nothing")
    rater.save(args.sufficiency_out)
    for run in runs:
        redecide(run, fitted)
    print(fitted.source)
    if fitted.grounded is not None:
        print(fitted.grounded.source)
    print(format_training(runs, fitted))
    print(f"wrote {args.out}: use it with --calibration {args.out} (HALLUWATCH_CALIBRATION), or copy it over"
          " agents/scoring/verify_calibration.json to ship it")
    print(rater.source)
    print(format_sufficiency(runs, rater))
    print(f"wrote {args.sufficiency_out}: use it with --sufficiency-rater {args.sufficiency_out}"
          " (HALLUWATCH_SUFFICIENCY_RATER), or copy it over agents/scoring/sufficiency_rater.json to ship it")
    return 0
