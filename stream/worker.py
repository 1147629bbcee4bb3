"""A halluwatch worker: the Faust app with the four stage agents, the model and the retriever."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from prometheus_client import REGISTRY

from agents.errors import RetrievalError

from stream.app import create_app
from stream.commands.common import build_pipeline
from stream.retrieval import build_retrieval
from stream.settings import Settings
from stream.stages import wire

log = logging.getLogger("halluwatch.stream")


def build_worker(settings: Settings, broker_url: str) -> Any:
    app, topics = create_app(settings, broker_url)
    pipeline = build_pipeline(settings)
    retrieval = build_retrieval(settings, pipeline.model, registry=REGISTRY)
    for path, report in zip(settings.evidence_files, retrieval.imported):
        log.log(logging.WARNING if report.bad else logging.INFO, "imported %s into the knowledge base: %d added, %d already there, %d bad rows%s", path,
                    report.added, report.duplicates, len(report.bad),
                    "".join(f"; line {b.line}: {b.reason}" for b in report.bad[:5]))
    wire(app, topics, pipeline, retrieval.retriever, settings.partitions, retrieval.kb_updater)

    @app.task
    async def load_model() -> None:
        # Load at start-up so a bad model path stops the worker at once, not at the first turn.
        await pipeline.model.load()
        if retrieval.web is not None:
            try:
                await asyncio.to_thread(retrieval.web.pool.warm)
            except RetrievalError as exc:
                # Not fatal: each web query will report the same reason as "no evidence from web".
                log.warning("web retriever: %s", exc)
        stats = await asyncio.to_thread(retrieval.kb.stats)
        log.info("worker ready: knowledge base %s with %d current documents, web retriever %s, model %s",
                 stats.path, stats.current, "on" if retrieval.web else "off",
                 settings.model.model_path or "embedded")

    @app.on_before_shutdown.connect
    async def close_retrieval(sender: Any, **kwargs: Any) -> None:
        # Browsers are separate processes: quit them, or they outlive the worker.
        retrieval.close()
        if retrieval.cache is not None:
            cache = retrieval.cache
            log.info("retrieval cache: %d hits, %d misses (hit rate %.0f%%)", cache.hits, cache.misses,
                     100 * cache.hit_rate)

    return app


def run_worker(settings: Settings, broker_url: str, loglevel: str = "WARNING") -> None:
    """Run until SIGINT/SIGTERM; more workers with the same settings share the partitions."""
    import faust

    app = build_worker(settings, broker_url)
    worker = faust.Worker(app, loglevel=loglevel, quiet=True)
    worker.execute_from_commandline()
