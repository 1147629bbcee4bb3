"""What several commands share: building the pipeline from settings, and input checks."""

from __future__ import annotations

import unicodedata

from agents.calibration import DEFAULT_PATH, VerifyCalibration
from agents.errors import InputError
from agents.llm import ModelRunner
from agents.pipeline import Pipeline, Prompts
from stream.settings import Settings


def build_pipeline(settings: Settings, model: ModelRunner | None = None) -> Pipeline:
    calibration = VerifyCalibration.load(settings.calibration_path or DEFAULT_PATH)
    return Pipeline(
        model=model or ModelRunner(settings.model),
        prompts=Prompts.load(),
        calibration=calibration,
        max_rounds=settings.max_rounds,
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
