"""Every use of llama-cpp-python beyond its public ``Llama`` API, in one place.

The model backend needs four things the public API does not offer: decoding a
batch while keeping logits only at chosen positions (to score a claim's
tokens as the prompt is read), reading one row of logits, a grammar sampler
it can apply to a single candidate (so greedy decoding need not constrain the
whole 262k vocabulary), and moving the context's token count to reuse a
cached prefix. To keep one copy of the weights for every prompt family, it
also saves and restores the KV cache of one sequence (a family's prompt
prefix): ``Llama.save_state`` would copy the whole logits buffer, which with
Gemma's 262k vocabulary is hundreds of megabytes. They reach into ``Llama._ctx``, ``Llama._batch``,
``Llama._model``, ``LlamaGrammar._grammar`` / ``._root`` and write
``Llama.n_tokens`` / ``Llama.input_ids``. Nothing else in halluwatch does.

On a CPU with AMX tiles (Intel Sapphire Rapids and later) llama.cpp's AMX matrix multiply crashes the
process on the embedded Q4_K_M weights (a segmentation fault at the first decode, seen here on 0.3.36; the
same crash is reported upstream as llama.cpp issue 20824). ``Llama`` has no parameter for the weights'
buffer type, so :func:`loading_without_amx` swaps the library's default model parameters while it loads.

Checked against llama-cpp-python 0.3.36 (pinned in pyproject.toml).
:func:`missing_private_attributes` lists what a new version no longer has;
an integration test calls it on the embedded model so an upgrade fails
loudly there instead of silently in generation.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Iterator
from typing import Any

CHECKED_VERSIONS = ("0.3.36",)

# What the adapter touches on a loaded model; see missing_private_attributes.
_LLAMA_PRIVATE = ("_ctx", "_batch", "_model")
_CONTEXT_PRIVATE = ("ctx", "kv_cache_seq_rm", "decode")
_BATCH_PRIVATE = ("set_batch", "batch")
_MODEL_PRIVATE = ("vocab",)
_GRAMMAR_PRIVATE = ("_grammar", "_root")
_LIBRARY_FUNCTIONS = (
    "llama_get_logits_ith", "llama_sampler_init_grammar", "llama_sampler_apply", "llama_sampler_accept",
    "llama_sampler_free", "llama_vocab_is_eog", "llama_token_data_array", "llama_token_data_p",
    "llama_log_callback", "llama_log_set", "llama_get_memory", "llama_memory_seq_rm", "llama_state_seq_get_size",
    "llama_state_seq_get_data", "llama_state_seq_set_data", "llama_model_default_params", "llama_print_system_info",
)

TOKEN_DATA = [("id", "<i4"), ("logit", "<f4"), ("p", "<f4")]  # numpy layout of llama_token_data


@functools.cache
def silence_log() -> Any:
    """Route llama.cpp's own log lines nowhere (``verbose=False`` misses some); once per process.

    The callback is returned (and cached) so it stays alive as long as llama.cpp may call it.
    """
    import llama_cpp

    callback = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))
    return callback


def has_amx() -> bool:
    """Whether this llama.cpp build multiplies on AMX tiles (built for, and running on, a CPU that has them)."""
    import llama_cpp

    return "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode(errors="replace")


@contextlib.contextmanager
def loading_without_amx() -> Iterator[None]:
    """While a ``Llama`` is constructed inside it: on an AMX build, weights go to plain CPU buffers.

    ``use_extra_bufts=False`` keeps llama.cpp from moving weights into its "extra" buffer types, AMX tiles
    among them (and the repacked layouts, which an AMX build would use instead). Elsewhere it does nothing,
    so other CPUs keep their faster repacked kernels. ``Llama.__init__`` reads
    ``llama_cpp.llama_cpp.llama_model_default_params()`` once, before loading; it is restored after.
    """
    import llama_cpp.llama_cpp as native

    if not has_amx():
        yield
        return
    default = native.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = default()
        params.use_extra_bufts = False
        return params

    native.llama_model_default_params = without_extra_buffers
    try:
        yield
    finally:
        native.llama_model_default_params = default


def json_grammar(schema_json: str) -> Any:
    """A llama.cpp grammar for JSON matching the schema, with control characters barred from strings.

    llama-cpp-python's converter lets raw control characters into strings, which JSON forbids; the model
    then emits a newline inside a string and the output fails to parse.
    """
    from llama_cpp import LlamaGrammar
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(schema_json)
    gbnf = gbnf.replace('char ::= [^"\\\\]', 'char ::= [^"\\\\\\x7F\\x00-\\x1F]')
    return LlamaGrammar.from_string(gbnf, verbose=False)


def grammar_sampler(llm: Any, grammar: Any) -> Any:
    """A fresh grammar sampler for one generation; free it with :func:`free_sampler`."""
    import llama_cpp

    return llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar._grammar.encode(), grammar._root.encode())


def free_sampler(sampler: Any) -> None:
    import llama_cpp

    llama_cpp.llama_sampler_free(sampler)


def accept(sampler: Any, token: int) -> None:
    import llama_cpp

    llama_cpp.llama_sampler_accept(sampler, token)


def apply_sampler(sampler: Any, candidates: Any) -> None:
    """Let the sampler set the logit of every token it forbids to -inf, in place (``candidates``: TOKEN_DATA array)."""
    import llama_cpp

    array = llama_cpp.llama_token_data_array(
        data=candidates.ctypes.data_as(llama_cpp.llama_token_data_p), size=len(candidates), selected=-1, sorted=False
    )
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))


def is_end_of_generation(llm: Any, token: int) -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_vocab_is_eog(llm._model.vocab, token))


def logits_row(llm: Any, i: int) -> Any:
    """The logits of output row ``i`` of the last decoded batch (-1: the last row), as a numpy view."""
    import llama_cpp
    import numpy as np

    pointer = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, i)
    return np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),))


def holds_prefix(llm: Any, tokens: list[int]) -> bool:
    """Whether the context's KV cache starts with exactly these tokens."""
    return llm.n_tokens >= len(tokens) and llm.input_ids[: len(tokens)].tolist() == tokens


def rewind(llm: Any, n_tokens: int) -> None:
    """Keep only the first ``n_tokens`` of the context: the next evaluation continues from there."""
    llm.n_tokens = n_tokens


def save_sequence(llm: Any) -> Any:
    """The KV cache of the context's sequence as an opaque buffer, for :func:`restore_sequence`.

    It holds the cache of the first ``llm.n_tokens`` tokens (about 12 KB per token for Gemma 3 270M).
    """
    import llama_cpp

    size = llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0)
    state = (ctypes.c_uint8 * size)()
    if llama_cpp.llama_state_seq_get_data(llm._ctx.ctx, state, size, 0) != size:
        raise RuntimeError("llama.cpp did not copy the whole sequence state")
    return state


def restore_sequence(llm: Any, state: Any, tokens: list[int]) -> None:
    """Replace the context's cache with a saved one; ``tokens`` are the tokens it was saved after."""
    import llama_cpp

    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm._ctx.ctx), 0, -1, -1)
    if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, state, len(state), 0) != len(state):
        raise RuntimeError("llama.cpp did not accept the saved sequence state")
    llm.input_ids[: len(tokens)] = tokens
    llm.n_tokens = len(tokens)


def decode_keeping(llm: Any, tokens: list[int], wanted: set[int]) -> dict[int, Any]:
    """Append ``tokens`` to the context, keeping the log-probability rows at the ``wanted`` positions.

    Like ``Llama.eval``, which keeps logits at every position or only the last; this keeps them where a
    scored token is predicted, so scoring a claim costs no extra pass.
    """
    import numpy as np

    llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
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
            logits = logits_row(llm, j).astype(np.float32)
            top = logits.max()
            rows[n_past + j] = logits - (top + np.log(np.exp(logits - top).sum()))
        llm.input_ids[n_past : n_past + len(batch)] = batch
        llm.n_tokens += len(batch)
    return rows


def _has(root: Any, dotted: str) -> bool:
    for name in dotted.split("."):
        if not hasattr(root, name):
            return False
        root = getattr(root, name)
    return True


# Everything below the public API that the adapter touches, as "Owner.attribute" paths.
PRIVATE_ATTRIBUTES = (
    *(f"Llama.{n}" for n in _LLAMA_PRIVATE),
    *(f"Llama._ctx.{n}" for n in _CONTEXT_PRIVATE),
    *(f"Llama._batch.{n}" for n in _BATCH_PRIVATE),
    *(f"Llama._model.{n}" for n in _MODEL_PRIVATE),
    "Llama.n_tokens", "Llama.input_ids", "Llama.n_batch",
    *(f"LlamaGrammar.{n}" for n in _GRAMMAR_PRIVATE),
    *(f"llama_cpp.{n}" for n in _LIBRARY_FUNCTIONS),
)


def missing_private_attributes(llm: Any, grammar: Any) -> list[str]:
    """Which of PRIVATE_ATTRIBUTES a loaded ``Llama``, a ``LlamaGrammar`` and the library lack."""
    import llama_cpp

    roots = {"Llama": llm, "LlamaGrammar": grammar, "llama_cpp": llama_cpp}
    return [path for path in PRIVATE_ATTRIBUTES if not _has(roots[path.split(".")[0]], path.split(".", 1)[1])]
