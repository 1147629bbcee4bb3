from __future__ import annotations

import socket
from pathlib import Path

import pytest

from stream.errors import StreamError
from stream.settings import Settings
from stream.worker import check_port, model_name


def test_a_taken_metrics_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = Settings.from_env({"HALLUWATCH_METRICS_HOST": "127.0.0.1", "HALLUWATCH_METRICS_PORT": str(port)})
        with pytest.raises(StreamError, match=f"port {port}.*HALLUWATCH_METRICS_PORT"):
            check_port(settings)


def test_model_name_says_which_model_runs() -> None:
    assert "embedded" in model_name(Settings.from_env({}))
    assert model_name(Settings.from_env({"HALLUWATCH_MODEL_PATH": "/models/big.gguf"})) == Path("big.gguf").name
