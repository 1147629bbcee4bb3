"""A scripted model that answers every prompt family the stream uses, from the prompt alone.

It costs nothing, so a worker built on it measures the stream itself: the
broker, Faust, the codecs, retrieval and scoring (``halluwatch bench
--scripted``, ``halluwatch soak``); :class:`SilentPairClassifier` stands in
for the evidence cross-encoder the same way. Its answers are valid and repeatable but
say nothing about truth: each sentence of a reply is one claim, and a claim is
labelled false when a hash of its text says so (about one in five), so alerts
and corrections flow as they do in production.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import orjson

from agents.model.backend import Prompt
from agents.testing.scripted_backend import ScriptedBackend
from agents.text import sentences
from schemas import Label, LabelScores

FALSE_ONE_IN = 5
_NUMBERED = re.compile(r"^\d+\. (.*)$", re.MULTILINE)


def claims_in(prompt: Prompt) -> list[str]:
    """The numbered claims of a verify prompt's input."""
    return _NUMBERED.findall(prompt.variable.rsplit("Claims:", 1)[-1])


def label_of(claim: str) -> Label:
    digest = hashlib.sha1(claim.encode()).digest()
    return Label.FALSE if digest[0] % FALSE_ONE_IN == 0 else Label.TRUE


def _segment(prompt: Prompt) -> str:
    reply = prompt.variable.rsplit("Reply:", 1)[-1].strip()
    return orjson.dumps({"claims": [s[:300] for s in sentences(reply)][:8]}).decode()


def _verify(prompt: Prompt) -> str:
    verdicts = [{"label": label_of(c).value, "why": "scripted"} for c in claims_in(prompt)]
    return orjson.dumps({"verdicts": verdicts}).decode()


def _scores(prompt: Prompt) -> list[LabelScores]:
    sure = {Label.TRUE: LabelScores(0.9, 0.05, 0.05), Label.FALSE: LabelScores(0.05, 0.9, 0.05)}
    return [sure[label_of(c)] for c in claims_in(prompt)]


def _correction(prompt: Prompt) -> str:
    claim = prompt.variable.split("Wrong claim:", 1)[-1].split("\n", 1)[0].strip()
    return orjson.dumps({"corrected": f"Not so: {claim}"[:240], "evidence": 1}).decode()


def stream_model_backend() -> ScriptedBackend:
    return ScriptedBackend(
        answers={
            "segment": _segment,
            "sources": '{"sources":[]}',
            "verify": _verify,
            "verify_closed_book": _verify,
            "justify": _correction,
            "kb_update": '{"better":"tie","reason_category":"other","reason":"scripted"}',
        },
        label_scores={"verify": _scores, "verify_closed_book": _scores},
        name="scripted (no model)",
        record_prompts=False,
    )


class SilentPairClassifier:
    """The evidence cross-encoder's stand-in beside the scripted model: it reads nothing and gives every
    pair a margin of 0, so a scripted worker measures the stream, not the encoder (whose features the
    scripted worker's identity calibration ignores anyway)."""

    def tokens(self, text: str) -> list[int]:
        return [len(word) for word in text.split()]

    def margins(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[float]:
        return [0.0] * len(pairs)
