"""A model's answers recorded once and replayed without the model.

Rules that run after a model call (segmentation's pronoun, duplicate and
skip rules) can then be re-measured on exactly the same answers in seconds
instead of a model run of many minutes, and two versions of the rules
compared on equal terms: ``halluwatch eval segmentation FILE
--save-answers A.jsonl`` records, ``--answers A.jsonl`` replays, and both
together (``--answers A.jsonl --save-answers B.jsonl``) replay what A has and
run the model only for the prompts A lacks (a rule before the model call
changed a few of them), writing every answer used to B.

Only the answer text is kept, not label probabilities or token scores: the
replay serves stages that read the answer alone, like segment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agents.errors import InputError
from agents.inputs import read_jsonl
from agents.model.backend import Backend, Footprint, Prompt, RawGeneration


def _key(prompt: Prompt) -> tuple[str, str]:
    return prompt.family, prompt.variable


class RecordingBackend:
    """Passes every call to a real backend (made on first use, on the model thread) and keeps its answers;
    prompts already answered in ``known`` (an earlier recording) are replayed without the model."""

    name = "recording"

    def __init__(self, make: Callable[[], Backend], known: RecordedBackend | None = None) -> None:
        self._make = make
        self._inner: Backend | None = None
        self._known = known
        self.answers: dict[tuple[str, str], str] = {}
        self.model_calls = 0

    def _backend(self) -> Backend:
        if self._inner is None:
            self._inner = self._make()
        return self._inner

    def complete(self, prompt: Prompt, schema: dict[str, Any], max_tokens: int) -> RawGeneration:
        if self._known is not None and _key(prompt) in self._known.answers:
            raw = self._known.complete(prompt, schema, max_tokens)
        else:
            raw = self._backend().complete(prompt, schema, max_tokens)
            self.model_calls += 1
        self.answers[_key(prompt)] = raw.text
        return raw

    def warm(self, prompt: Prompt) -> int:
        return self._backend().warm(prompt)

    def footprint(self) -> Footprint:
        return self._backend().footprint()

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()

    def save(self, path: Path) -> None:
        lines = (orjson.dumps({"family": f, "prompt": v, "answer": a}) for (f, v), a in self.answers.items())
        path.write_bytes(b"\n".join(lines) + b"\n")


@dataclass
class RecordedBackend:
    """Answers each prompt with the answer recorded for it; a prompt never recorded is an error, not a guess."""

    answers: dict[tuple[str, str], str]
    source: str = "answers"
    name: str = "recorded"

    @classmethod
    def load(cls, path: Path) -> RecordedBackend:
        answers: dict[tuple[str, str], str] = {}
        for n, row in read_jsonl(path):
            try:
                answers[(str(row["family"]), str(row["prompt"]))] = str(row["answer"])
            except KeyError:
                raise InputError(f"{path}:{n}: not a recorded answer (needs family, prompt, answer): "
                                 "give a file written by --save-answers") from None
        return cls(answers=answers, source=str(path))

    def complete(self, prompt: Prompt, schema: dict[str, Any], max_tokens: int) -> RawGeneration:
        answer = self.answers.get(_key(prompt))
        if answer is None:
            raise InputError(
                f"{self.source} has no recorded {prompt.family} answer for the prompt {prompt.variable[:120]!r}: "
                "the rules before the model call or the input file changed since it was recorded; "
                "record again with --save-answers"
            )
        return RawGeneration(text=answer, label_probs=(), token_scores=(), prompt_tokens=0, reused_tokens=0,
                             variable_tokens=0, generated_tokens=0)

    def warm(self, prompt: Prompt) -> int:
        return 0

    def footprint(self) -> Footprint:
        return Footprint(model_copies=0, weight_bytes=0, prefix_cache_bytes=0, prefix_families=0)

    def close(self) -> None:
        pass
