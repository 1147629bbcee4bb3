"""Test doubles that ship with the library, like an injectable transport.

:class:`ScriptedBackend` stands in for llama.cpp in unit tests of stage logic:
it answers each prompt family from a script, so tests assert on what the
stages do with an answer without loading a model. It is never the only test
of a capability: the integration tests run the real embedded model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.llm import Prompt, RawGeneration
from schemas import LabelScores

Answer = str | Callable[[Prompt], str]


@dataclass
class ScriptedBackend:
    """Answers ``family -> JSON text`` (or a function of the prompt); records every prompt it saw."""

    answers: dict[str, Answer]
    label_scores: dict[str, Sequence[LabelScores]] = field(default_factory=dict)
    name: str = "scripted"
    prompts: list[Prompt] = field(default_factory=list)

    def complete(self, prompt: Prompt, schema: dict[str, Any], max_tokens: int) -> RawGeneration:
        self.prompts.append(prompt)
        if prompt.family not in self.answers:
            raise AssertionError(f"ScriptedBackend has no answer for the {prompt.family!r} prompt family")
        answer = self.answers[prompt.family]
        text = answer(prompt) if callable(answer) else answer
        return RawGeneration(
            text=text,
            label_scores=tuple(self.label_scores.get(prompt.family, ())),
            prompt_tokens=len(prompt.text.split()),
            reused_tokens=0,
            generated_tokens=len(text.split()),
        )

    def close(self) -> None:
        pass
