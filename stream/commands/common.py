"""What several commands share: building the pipeline from settings, and input checks."""

from __future__ import annotations

import dataclasses
import unicodedata

from agents.calibration import DEFAULT_PATH, VerifyCalibration
from agents.errors import InputError
from agents.llm import ModelRunner
from agents.pipeline import Pipeline, Prompts
from agents.selective import DEFAULT_PATH as SELECTIVE_PATH
from agents.selective import SelectiveModel
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
    calibration = VerifyCalibration.load(settings.calibration_path or DEFAULT_PATH)
    return Pipeline(
        model=model or ModelRunner(settings.model),
        prompts=Prompts.load(),
        calibration=calibration,
        max_rounds=settings.max_rounds,
        selective=selective_model(settings),
    )


def readable_text(text: str, what: str = "the text") -> str:
    """The text, stripped; an InputError when it is empty or not readable text (binary junk)."""
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{what} is empty: pass the assistant's utterance, e.g. halluwatch check \"Paris is in France.\"")
    # Undecodable bytes arrive as lone surrogates; control characters mean binary data.
    bad = sum(
        1 for ch in stripped
        if 0xD800 <= ord(ch) <= 0xDFFF or (unicodedata.category(ch) == "Cc" and ch not in "\t\n\r")
    )
    if bad or unicodedata.category(stripped[0]) == "Co":
        raise InputError(f"{what} is not readable text ({bad} binary or control characters): pass plain UTF-8 text")
    return stripped
