"""A halluwatch worker: the Faust app with the four stage agents, the model and the retriever."""

from __future__ import annotations

import logging
from typing import Any

from agents.retrieve import PassageIndex
from stream.app import create_app
from stream.commands.common import build_pipeline
from stream.settings import Settings
from stream.stages import wire


def build_worker(settings: Settings, broker_url: str) -> Any:
    app, topics = create_app(settings, broker_url)
    pipeline = build_pipeline(settings)
    retriever = PassageIndex.from_files(settings.evidence_files)
    wire(app, topics, pipeline, retriever, settings.partitions)

    @app.task
    async def load_model() -> None:
        # Load at start-up so a bad model path stops the worker at once, not at the first turn.
        await pipeline.model.load()
        logging.getLogger("halluwatch.stream").info(
            "worker ready: %d evidence passages, model %s", len(retriever.passages), settings.model.model_path or "embedded"
        )

    return app


def run_worker(settings: Settings, broker_url: str, loglevel: str = "WARNING") -> None:
    """Run until SIGINT/SIGTERM; more workers with the same settings share the partitions."""
    import faust

    app = build_worker(settings, broker_url)
    worker = faust.Worker(app, loglevel=loglevel, quiet=True)
    worker.execute_from_commandline()
