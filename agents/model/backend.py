"""What a model backend is given and gives back: the seam between the runner and llama.cpp.

:class:`~agents.model.llama_backend.LlamaBackend` implements :class:`Backend`
over llama-cpp-python; tests inject
:class:`agents.testing.scripted_backend.ScriptedBackend` instead of mocking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Prompt:
    family: str
    static: str
    variable: str
    # Substrings of `variable`, in order, whose tokens the runner scores while it reads the prompt
    # (see TokenScore); `reference` is the text whose tokens count as alternatives there.
    scored: tuple[str, ...] = ()
    reference: str = ""

    @property
    def text(self) -> str:
        return self.static + self.variable


@dataclass(frozen=True)
class RawGeneration:
    """What a backend returns for one call."""

    text: str
    # At each "label" position of the output: the probability of each value the schema allows there.
    label_probs: tuple[dict[str, float], ...]
    prompt_tokens: int
    reused_tokens: int
    generated_tokens: int
    prompt_seconds: float = 0.0  # time spent evaluating the non-reused part of the prompt
    # Tokens of the prompt's variable part: all a call must evaluate when its family's prefix is cached.
    variable_tokens: int = 0
    token_scores: tuple[tuple[TokenScore, ...], ...] = ()  # one tuple per `Prompt.scored` substring


@dataclass(frozen=True)
class TokenScore:
    """One token of a scored continuation."""

    piece: str
    logprob: float  # log P(token | prompt and the continuation's earlier tokens)
    # The best log P at this position among the reference text's tokens that the continuation lacks:
    # how strongly the reference suggests something else here (-inf when there is no such token).
    best_alternative: float


@dataclass(frozen=True)
class Footprint:
    """What a backend holds in memory: how many copies of the weights, their size, and the prefix caches."""

    model_copies: int
    weight_bytes: int  # the model file, mapped once per copy
    prefix_cache_bytes: int  # saved KV caches of the prompt families' static prefixes
    prefix_families: int


class Backend(Protocol):
    """Runs one completion synchronously. Called only from the runner's thread."""

    name: str

    def complete(self, prompt: Prompt, schema: dict[str, Any], max_tokens: int) -> RawGeneration: ...

    def warm(self, prompt: Prompt) -> int:
        """Evaluate and keep ``prompt``'s static prefix now; the prompt tokens this evaluated (0: already kept)."""
        ...

    def footprint(self) -> Footprint: ...

    def close(self) -> None: ...
