"""Building the pipeline from settings: the one place the worker and every command get their stages from."""

from __future__ import annotations

import dataclasses

from agents.errors import InputError
from agents.model.judge import judge_runner
from agents.model.nli import NliRunner
from agents.model.runner import ModelRunner
from agents.parsing import shared_parser
from agents.scoring.calibration import DEFAULT_PATH, JUDGE_PATHS, VerifyCalibration
from agents.scoring.selective import DEFAULT_PATH as SELECTIVE_PATH
from agents.scoring.selective import SelectiveModel
from agents.scoring.sufficiency import DEFAULT_PATH as SUFFICIENCY_PATH
from agents.scoring.sufficiency import SufficiencyRater
from agents.stages.pipeline import Pipeline, Prompts
from stream.settings import Settings


def selective_model(settings: Settings) -> SelectiveModel | None:
    """The selective-verdict model with the threshold the settings ask for; None never abstains."""
    for name, value in (("ABSTAIN_COVERAGE", settings.abstain_coverage), ("ABSTAIN_PRECISION", settings.abstain_precision),
                        ("ABSTAIN_THRESHOLD", settings.abstain_threshold)):
        if value is not None and not 0 <= value <= 1:
            raise InputError(f"HALLUWATCH_{name}={value} is out of range: give a number from 0 to 1")
    if settings.abstain_threshold == 0:
        return None  # a zero threshold never abstains: no calibration file needed
    model = SelectiveModel.load(settings.selective_path or SELECTIVE_PATH)
    if settings.abstain_threshold is not None:
        return dataclasses.replace(model, threshold=settings.abstain_threshold)
    return model.with_target(settings.abstain_coverage, settings.abstain_precision)


def build_pipeline(settings: Settings, model: ModelRunner | None = None) -> Pipeline:
    judge = None
    if settings.judge is not None:
        judge = judge_runner(settings.judge, settings.model.cache_dir, settings.model.n_threads)
    shipped = JUDGE_PATHS.get(settings.judge or "", DEFAULT_PATH)  # each judge's own fit, read off its letters
    calibration = VerifyCalibration.load(settings.calibration_path or shipped)
    if calibration.judge != settings.judge and calibration.judge is not None:
        raise InputError(f"the calibration {settings.calibration_path or shipped} reads the judge"
                         f" {calibration.judge}'s letters: set HALLUWATCH_JUDGE (--judge) to {calibration.judge},"
                         " or give another calibration")
    if calibration.judge is not None and calibration.closed_book is None:
        raise InputError(f"the calibration {settings.calibration_path or shipped} reads the judge's letters but has"
                         " no fit for claims without evidence, which the judge does not read: refit it with"
                         f" `halluwatch train-verifier --judge {calibration.judge} --out OUT.json`")
    return Pipeline(
        model=model or ModelRunner(settings.model),
        nli=NliRunner(threads=settings.model.encoder_threads),
        prompts=Prompts.load(),
        calibration=calibration,
        parser=shared_parser(),
        max_rounds=settings.max_rounds,
        find_sources=settings.finds_sources,
        selective=selective_model(settings),
        sufficiency=SufficiencyRater.load(settings.sufficiency_path or SUFFICIENCY_PATH),
        judge=judge,
    )
