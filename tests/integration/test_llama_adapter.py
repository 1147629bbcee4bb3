"""The private llama-cpp-python attributes the model backend relies on are still there, on the real model.

One test per attribute: an upgrade that removes one fails here by name instead of breaking generation
or prefix reuse.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import llama_cpp
import pytest

from agents.model import llama_adapter
from agents.model.config import ModelConfig
from agents.model.llama_backend import resolve_model_path


@pytest.fixture(scope="module")
def loaded() -> Iterator[tuple[Any, Any]]:
    with llama_adapter.loading_without_amx():
        llm = llama_cpp.Llama(model_path=str(resolve_model_path(ModelConfig())), n_ctx=256, n_threads=2,
                              verbose=False)
    grammar = llama_adapter.json_grammar('{"type": "object", "properties": {"label": {"enum": ["true", "false"]}}}')
    yield llm, grammar
    llm.close()


@pytest.mark.parametrize("attribute", llama_adapter.PRIVATE_ATTRIBUTES)
def test_llama_cpp_has(attribute: str, loaded: tuple[Any, Any]) -> None:
    assert attribute not in llama_adapter.missing_private_attributes(*loaded), (
        f"llama-cpp-python {llama_cpp.__version__} has no {attribute}: update agents/model/llama_adapter.py"
        f" (checked on {llama_adapter.CHECKED_VERSIONS})"
    )


def test_prefix_bookkeeping_and_kept_logits_work(loaded: tuple[Any, Any]) -> None:
    llm, _ = loaded
    tokens = llm.tokenize(b"The Eiffel Tower is in Paris.", add_bos=True)
    llama_adapter.rewind(llm, 0)
    llm.eval(tokens)
    assert llama_adapter.holds_prefix(llm, tokens[:3]) and not llama_adapter.holds_prefix(llm, [tokens[0] + 1])
    rows = llama_adapter.decode_keeping(llm, llm.tokenize(b" It opened", add_bos=False), {len(tokens)})
    assert list(rows) == [len(tokens)], "log-probabilities are kept only where asked"
    assert abs(float(rows[len(tokens)].max())) < 20 and llama_adapter.logits_row(llm, -1).shape == (llm.n_vocab(),)


def test_the_library_version_is_one_the_adapter_was_checked_on() -> None:
    assert llama_cpp.__version__ in llama_adapter.CHECKED_VERSIONS, (
        f"llama-cpp-python {llama_cpp.__version__} was not checked: run the integration tests, then add it to"
        " agents/model/llama_adapter.py CHECKED_VERSIONS"
    )


def test_on_an_amx_build_weights_load_without_extra_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp's AMX kernels crash on the embedded weights; the guard must reach the parameters that
    ``Llama`` loads with, and leave the library's defaults as they were."""
    import llama_cpp.llama_cpp as native

    default = native.llama_model_default_params
    for amx in (True, False):
        monkeypatch.setattr(llama_adapter, "has_amx", lambda amx=amx: amx)
        with llama_adapter.loading_without_amx():
            assert native.llama_model_default_params().use_extra_bufts is (not amx)
        assert native.llama_model_default_params is default


def test_a_missing_attribute_is_named() -> None:
    class Bare:
        pass

    assert "Llama._ctx" in llama_adapter.missing_private_attributes(Bare(), Bare())


def test_a_saved_sequence_restores_the_same_cache(loaded: tuple[Any, Any]) -> None:
    llm, _ = loaded
    prefix = llm.tokenize(b"The Eiffel Tower is in", add_bos=True)
    llama_adapter.rewind(llm, 0)
    llm.eval(prefix)
    state = llama_adapter.save_sequence(llm)
    expected = llama_adapter.decode_keeping(llm, llm.tokenize(b" Paris", add_bos=False), {len(prefix)})[len(prefix)]
    llama_adapter.rewind(llm, 0)
    llm.eval(llm.tokenize(b"Something else entirely, and longer than the prefix was.", add_bos=True))
    llama_adapter.restore_sequence(llm, state, prefix)
    assert llama_adapter.holds_prefix(llm, prefix) and llm.n_tokens == len(prefix)
    again = llama_adapter.decode_keeping(llm, llm.tokenize(b" Paris", add_bos=False), {len(prefix)})[len(prefix)]
    assert (again == expected).all()
