"""The model runner: a local GGUF model through llama-cpp-python, off the event loop.

Design, in the order a caller meets it:

* ``ModelRunner.generate`` is async. Every model call runs on one dedicated
  thread per runner (a single-worker executor), so the asyncio loop never
  blocks and concurrent callers are served first come, first served.
* Each prompt is a :class:`Prompt`: a *family* (one llama.cpp context per
  family), a static part (instructions and few-shot examples) and a variable
  part. Each family keeps its static part in its context's KV cache, so the
  static part is evaluated once and every later call pays only for its
  variable part.
* Output is constrained by a llama.cpp grammar generated from the JSON Schema
  of the expected output record, so even a tiny base model returns parseable
  JSON. The token budget defaults to the longest answer that grammar allows, so
  an answer is never cut mid-string. A response that still fails to parse or
  validate is retried once, then raised as :class:`ModelOutputError`; nothing
  is ever guessed.
* Wherever the output has a ``"label"`` field, the runner reads the model's
  next-token distribution at that position and reports the probability mass on
  each label (:class:`~schemas.LabelScores`).

The llama.cpp part sits behind the small :class:`Backend` protocol so unit
tests can inject :class:`agents.testing.scripted_backend.ScriptedBackend` instead of mocking.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson

from agents.errors import ModelOutputError
from agents.model.backend import Backend, Footprint, Prompt, RawGeneration, TokenScore
from agents.model.budget import output_budget
from agents.model.config import ModelConfig
from schemas import Label, LabelScores, RecordError, from_dict
from schemas.generate import schema_for

T = TypeVar("T")


@dataclass(frozen=True)
class Generation(Generic[T]):
    output: T
    text: str
    label_probs: tuple[dict[str, float], ...]
    prompt_tokens: int
    reused_tokens: int
    generated_tokens: int
    prompt_seconds: float
    seconds: float  # time in the model (both attempts), not counting the wait for the model thread
    attempts: int
    token_scores: tuple[tuple[TokenScore, ...], ...] = ()
    variable_tokens: int = 0  # see RawGeneration

    @property
    def label_scores(self) -> tuple[LabelScores, ...]:
        """``label_probs`` as verdict scores, for outputs whose labels are true / false / unverifiable."""
        return tuple(LabelScores(**{label.value: p.get(label.value, 0.0) for label in Label}) for p in self.label_probs)


@functools.cache
def _default_schema(output: type) -> dict[str, Any]:
    """The schema of an output type, built once (the runner and backends only read it)."""
    return schema_for(output)


class ModelRunner:
    """Async front of one model: one thread, fair queueing, grammar-constrained typed output."""

    def __init__(self, config: ModelConfig | None = None, backend: Backend | None = None):
        self.config = config or ModelConfig()
        self._backend_arg = backend
        self._backend: Backend | None = backend
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="halluwatch-model")
        self._lock = threading.Lock()  # guards lazy backend creation inside the model thread

    @property
    def backend_name(self) -> str:
        return self._backend.name if self._backend else "llama.cpp"

    def _ensure_backend(self) -> Backend:
        with self._lock:
            if self._backend is None:
                from agents.model.llama_backend import LlamaBackend  # loads the native library only when needed

                self._backend = LlamaBackend(self.config)
            return self._backend

    async def load(self) -> None:
        """Load the model now (otherwise the first call does), reporting a bad model path early."""
        await asyncio.get_running_loop().run_in_executor(self._executor, self._ensure_backend)

    async def generate(
        self, prompt: Prompt, output: type[T], max_tokens: int | None = None, schema: dict[str, Any] | None = None
    ) -> Generation[T]:
        """Run one constrained completion and parse it into ``output``.

        ``schema`` overrides the grammar's schema (it must still describe ``output``),
        e.g. to fix the number of items for this call. ``max_tokens`` defaults to enough for the longest
        answer the schema allows (:func:`~agents.model.budget.output_budget`), so no answer is cut short.
        """
        schema = schema or _default_schema(output)
        if max_tokens is None:
            max_tokens = output_budget(schema)
        loop = asyncio.get_running_loop()
        model_seconds = 0.0
        last_error = ""
        for attempt in (1, 2):
            raw, seconds = await loop.run_in_executor(self._executor, self._complete, prompt, schema, max_tokens)
            model_seconds += seconds
            try:
                value = from_dict(output, orjson.loads(raw.text))
            except (orjson.JSONDecodeError, RecordError) as exc:
                cut = f", cut at its budget of {max_tokens} tokens" if raw.generated_tokens >= max_tokens else ""
                last_error = f"{str(exc)[:200]}{cut}"
                continue
            return Generation(
                output=value,
                text=raw.text,
                label_probs=raw.label_probs,
                prompt_tokens=raw.prompt_tokens,
                reused_tokens=raw.reused_tokens,
                variable_tokens=raw.variable_tokens,
                generated_tokens=raw.generated_tokens,
                prompt_seconds=raw.prompt_seconds,
                seconds=model_seconds,
                attempts=attempt,
                token_scores=raw.token_scores,
            )
        raise ModelOutputError(
            f"the model's {prompt.family} output was not valid {output.__name__} JSON twice"
            f" ({last_error}); a larger model (HALLUWATCH_MODEL_PATH) keeps to the format more reliably"
        )

    def _complete(self, prompt: Prompt, schema: dict[str, Any], max_tokens: int) -> tuple[RawGeneration, float]:
        """Runs on the model thread; the time measured here excludes waiting in the queue."""
        backend = self._ensure_backend()
        started = time.perf_counter()
        raw = backend.complete(prompt, schema, max_tokens)
        return raw, time.perf_counter() - started

    async def warm(self, prompts: Sequence[Prompt]) -> int:
        """Evaluate and keep these prompt families' static prefixes now (on the model thread), so the first
        turn of each family pays only for its own text; the prompt tokens this evaluated."""
        backend = await asyncio.get_running_loop().run_in_executor(self._executor, self._ensure_backend)
        total = 0
        for prompt in prompts:
            total += await asyncio.get_running_loop().run_in_executor(self._executor, backend.warm, prompt)
        return total

    async def footprint(self) -> Footprint | None:
        """What the loaded model holds in memory (asked on the model thread); None before it is loaded."""
        if self._backend is None:
            return None
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._backend.footprint)

    def with_prefix_reuse(self, enabled: bool) -> ModelRunner:
        """A separate runner (own contexts) with prefix reuse switched on or off; for benchmarks."""
        return ModelRunner(dataclasses.replace(self.config, prefix_reuse=enabled), self._backend_arg)

    async def __aenter__(self) -> ModelRunner:
        """``async with runner:`` loads the model now and always closes it after, also when loading fails."""
        try:
            await self.load()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        if self._backend is not None:
            await loop.run_in_executor(self._executor, self._backend.close)
        self._executor.shutdown(wait=False)
