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

from agents.model.backend import Footprint, Prompt, RawGeneration, TokenScore
from schemas import Label, LabelScores

Answer = str | Callable[[Prompt], str]


@dataclass
class ScriptedBackend:
    """Answers ``family -> JSON text`` (or a function of the prompt); records every prompt it saw."""

    answers: dict[str, Answer]
    # Per family, the label probabilities to report at each "label" position of the answer.
    # (or a function of the prompt giving them).
    label_scores: dict[str, Sequence[LabelScores | dict[str, float]] | Callable[[Prompt], Sequence[LabelScores]]] = field(
        default_factory=dict
    )
    # Per family, the token scores of each `Prompt.scored` piece; by default every word of a piece
    # scores -1.0 with no alternative, a neutral fit.
    token_scores: dict[str, Callable[[str], tuple[TokenScore, ...]]] = field(default_factory=dict)
    name: str = "scripted"
    prompts: list[Prompt] = field(default_factory=list)
    record_prompts: bool = True  # off in a long-running worker, where the list would only grow
    warmed: list[str] = field(default_factory=list)  # the families whose prefix warm() was asked to keep

    def complete(self, prompt: Prompt, schema: dict[str, Any], max_tokens: int) -> RawGeneration:
        if self.record_prompts:
            self.prompts.append(prompt)
        if prompt.family not in self.answers:
            raise AssertionError(f"ScriptedBackend has no answer for the {prompt.family!r} prompt family")
        answer = self.answers[prompt.family]
        text = answer(prompt) if callable(answer) else answer
        return RawGeneration(
            text=text,
            label_probs=tuple(_probs(s) for s in self._label_scores(prompt)),
            token_scores=tuple(self.token_scores.get(prompt.family, neutral_scores)(piece) for piece in prompt.scored),
            prompt_tokens=len(prompt.text.split()),
            reused_tokens=0,
            variable_tokens=len(prompt.variable.split()),
            generated_tokens=len(text.split()),
        )

    def _label_scores(self, prompt: Prompt) -> Sequence[LabelScores | dict[str, float]]:
        scores = self.label_scores.get(prompt.family, ())
        return scores(prompt) if callable(scores) else scores

    def warm(self, prompt: Prompt) -> int:
        self.warmed.append(prompt.family)
        return 0  # nothing to evaluate: a scripted answer costs nothing

    def footprint(self) -> Footprint:
        return Footprint(model_copies=0, weight_bytes=0, prefix_cache_bytes=0, prefix_families=0)

    def close(self) -> None:
        pass


def _probs(scores: LabelScores | dict[str, float]) -> dict[str, float]:
    if isinstance(scores, LabelScores):
        return {label.value: scores.of(label) for label in Label}
    return dict(scores)


def neutral_scores(piece: str) -> tuple[TokenScore, ...]:
    return tuple(TokenScore(piece=" " + word, logprob=-1.0, best_alternative=float("-inf")) for word in piece.split())
