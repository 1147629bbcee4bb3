"""The private llama-cpp-python attributes the model backend relies on are still there, on the real model.

An upgrade that removes one fails here by name instead of breaking generation or prefix reuse.
"""

from __future__ import annotations

import llama_cpp

from agents.model import llama_adapter
from agents.model.config import ModelConfig
from agents.model.llama_backend import resolve_model_path


def test_loaded_model_and_grammar_have_what_the_adapter_uses() -> None:
    llm = llama_cpp.Llama(model_path=str(resolve_model_path(ModelConfig())), n_ctx=256, n_threads=2, verbose=False)
    try:
        grammar = llama_adapter.json_grammar('{"type": "object", "properties": {"label": {"enum": ["true", "false"]}}}')
        missing = llama_adapter.missing_private_attributes(llm, grammar)
        assert not missing, (
            f"llama-cpp-python {llama_cpp.__version__} lacks {missing}: update agents/model/llama_adapter.py"
            f" (checked on {llama_adapter.CHECKED_VERSIONS})"
        )
        # The prefix bookkeeping the backend's reuse depends on: after evaluating tokens the context holds them.
        tokens = llm.tokenize(b"The Eiffel Tower is in Paris.", add_bos=True)
        llm.eval(tokens)
        assert llama_adapter.holds_prefix(llm, tokens[:3]) and not llama_adapter.holds_prefix(llm, [tokens[0] + 1])
        rows = llama_adapter.decode_keeping(llm, llm.tokenize(b" It opened", add_bos=False), {len(tokens)})
        assert list(rows) == [len(tokens)] and abs(float(llama_adapter.logits_row(llm, -1).max())) > 0
    finally:
        llm.close()


def test_the_library_version_is_one_the_adapter_was_checked_on() -> None:
    assert llama_cpp.__version__ in llama_adapter.CHECKED_VERSIONS, (
        f"llama-cpp-python {llama_cpp.__version__} was not checked: run the integration tests, then add it to"
        " agents/model/llama_adapter.py CHECKED_VERSIONS"
    )
