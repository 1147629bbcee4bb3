import asyncio
import threading

import pytest

from agents.errors import ModelFileError, ModelOutputError
from agents.model.backend import Prompt
from agents.model.config import ModelConfig
from agents.model.llama_backend import resolve_model_path
from agents.stages.segment import SegmentOutput


async def test_bad_output_is_retried_once_then_a_typed_error(scripted) -> None:
    runner, backend = scripted({"segment": '{"claims": [unclosed'})
    with pytest.raises(ModelOutputError, match="not valid SegmentOutput JSON twice"):
        await runner.generate(Prompt("segment", "s", "v"), SegmentOutput)
    assert len(backend.prompts) == 2


async def test_second_attempt_can_succeed(scripted) -> None:
    answers = iter(['{"claims": 7}', '{"claims": ["ok"]}'])
    runner, _ = scripted({"segment": lambda prompt: next(answers)})
    generation = await runner.generate(Prompt("segment", "s", "v"), SegmentOutput)
    assert generation.output == SegmentOutput(claims=("ok",)) and generation.attempts == 2


async def test_calls_run_on_one_thread_in_arrival_order(scripted) -> None:
    threads: set[str] = set()
    order: list[str] = []

    def answer(prompt: Prompt) -> str:
        threads.add(threading.current_thread().name)
        order.append(prompt.variable)
        return '{"claims": []}'

    runner, _ = scripted({"segment": answer})
    await asyncio.gather(*(runner.generate(Prompt("segment", "s", str(i)), SegmentOutput) for i in range(8)))
    assert order == [str(i) for i in range(8)]
    assert len(threads) == 1 and threading.current_thread().name not in threads


def test_missing_model_file_names_the_setting(tmp_path) -> None:
    with pytest.raises(ModelFileError, match="HALLUWATCH_MODEL_PATH"):
        resolve_model_path(ModelConfig(model_path=tmp_path / "nope.gguf"))


def test_non_gguf_file_is_refused(tmp_path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        resolve_model_path(ModelConfig(model_path=fake))


async def test_async_with_loads_and_always_closes(scripted, tmp_path) -> None:
    runner, backend = scripted({"segment": '{"claims": []}'})
    async with runner as loaded:
        assert loaded is runner
        await runner.generate(Prompt("segment", "s", "v"), SegmentOutput)
    with pytest.raises(RuntimeError):  # closed: its model thread takes no more work
        await runner.generate(Prompt("segment", "s", "v"), SegmentOutput)

    from agents.model.runner import ModelRunner

    missing = ModelRunner(ModelConfig(model_path=tmp_path / "nope.gguf"))
    with pytest.raises(ModelFileError, match="HALLUWATCH_MODEL_PATH"):
        async with missing:
            pass
    with pytest.raises(RuntimeError):  # a failed load closes the runner too
        await missing.generate(Prompt("segment", "s", "v"), SegmentOutput)
