from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

from stream.errors import StreamError
from stream.settings import Settings
from stream.worker import check_port, faust_worker, model_name


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


def test_the_worker_keeps_the_log_level_it_was_given() -> None:
    import faust

    app = faust.App("halluwatch-test-logging", broker="memory://")
    worker = faust_worker(app, loglevel="WARNING")
    root = logging.getLogger()
    before = root.level
    try:
        root.setLevel(logging.WARNING)
        worker.on_setup_root_logger(root, logging.WARNING)  # where Faust would lower it for its spinner
        assert root.level == logging.WARNING
        assert not logging.getLogger("aiokafka").isEnabledFor(logging.DEBUG)
    finally:
        root.setLevel(before)
