"""Shared fixtures: scripted model runners for unit tests, the real embedded model for integration."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from agents.model.config import ModelConfig
from agents.model.nli import NliRunner
from agents.model.runner import ModelRunner
from agents.parsing import SentenceParser, shared_parser
from agents.testing.scripted_backend import Answer, ScriptedBackend
from agents.testing.stream_model import SilentPairClassifier

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
        if "/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture
def scripted() -> Callable[..., tuple[ModelRunner, ScriptedBackend]]:
    """Factory: a runner whose model answers from a script (family -> JSON text)."""
    made: list[ModelRunner] = []

    def make(answers: dict[str, Answer], **kwargs: object) -> tuple[ModelRunner, ScriptedBackend]:
        backend = ScriptedBackend(answers=answers, **kwargs)  # type: ignore[arg-type]
        runner = ModelRunner(ModelConfig(), backend=backend)
        made.append(runner)
        return runner, backend

    return make


@pytest.fixture(scope="session")
async def real_model() -> AsyncIterator[ModelRunner]:
    """The real embedded Gemma 3 270M, loaded once for the whole session."""
    runner = ModelRunner(ModelConfig(n_threads=2))
    yield runner
    await runner.aclose()


@pytest.fixture(scope="session")
def parser() -> SentenceParser:
    """The real sentence parser (spaCy's small English pipeline, from its package), loaded once."""
    return shared_parser()


@pytest.fixture(scope="session")
def nli() -> Iterator[NliRunner]:
    """The real evidence cross-encoder (from its package), loaded once on first use."""
    runner = NliRunner()
    yield runner
    runner.close()


@pytest.fixture(scope="session")
def silent_nli() -> NliRunner:
    """A cross-encoder that reads every pair as neutral: for unit tests whose scripted claims are faithful."""
    return NliRunner(SilentPairClassifier())
