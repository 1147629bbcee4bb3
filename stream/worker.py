"""A halluwatch worker: the Faust app with the four stage agents, the model, the retriever and its web server."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from importlib import metadata
from typing import Any

from aiokafka.errors import KafkaError
from prometheus_client import CollectorRegistry

from agents.errors import RetrievalError
from agents.stages.pipeline import Pipeline
from stream import aiokafka_adapter, faust_adapter
from stream.alert_feed import AlertBuffer, AlertFeed
from stream.app import TOPIC_NAMES, app_id, bootstrap_servers, create_app, topic_name
from stream.broker_outage import outages_seen, restart_in_place, wait_for_broker
from stream.broker_watch import BrokerWatch, parse_bootstrap, quiet_client_retries, reachable
from stream.build import build_pipeline
from stream.errors import StreamError
from stream.lag import consumer_lags, stage_highwaters
from stream.metrics import Metrics, NoMetrics, PipelineMetrics
from stream.order_guard import KafkaOffsetReader, OrderGuard
from stream.retrieval import build_retrieval
from stream.settings import Settings
from stream.stages import STAGE_OF_TOPIC, wire
from stream.topic_admin import ensure_topics
from stream.web import WorkerWeb, make_web_app, serve

log = logging.getLogger("halluwatch.stream")
LAG_INTERVAL = 5.0  # seconds between readings of the partitions (stalls and consumer lag)
BROKER_PROBE_INTERVAL = 1.0  # seconds between probes of the broker's bootstrap addresses
# How long a fetch waits at the broker when there is nothing to read. Faust fixes it at 1.5 s; a broker that
# does not answer a waiting fetch as soon as data arrives (the embedded one) then holds each record up to that
# long at every stage, 0.75 s on average (measured: 3 hops, median 2.3 s with no model). Kafka answers early
# either way, so the shorter wait costs only a few more empty fetches on an idle stream.
FETCH_MAX_WAIT_MS = 100
# The stage agents' input topics: the ones a worker consumes and so can lag on.
CONSUMED = tuple(STAGE_OF_TOPIC)


def model_name(settings: Settings) -> str:
    path = settings.model.model_path
    return path.name if path else "gemma3-270m-q4_k_m (embedded)"


def halluwatch_version() -> str:
    try:
        return metadata.version("halluwatch")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def build_metrics(settings: Settings, pipeline: Pipeline | None, outages: int) -> tuple[CollectorRegistry | None, Metrics]:
    """A fresh registry with the worker's metrics (None and :class:`NoMetrics` when metrics are off).

    ``outages``: broker outages this worker restarted after (see :mod:`stream.broker_outage`), so the counter
    goes on counting across restarts."""
    if not settings.metrics_enabled:
        return None, NoMetrics()
    registry = CollectorRegistry()
    metrics = PipelineMetrics(registry)
    name = model_name(settings) if pipeline is None else pipeline.model.backend_name
    metrics.set_build_info(halluwatch_version(), name, settings.model.n_gpu_layers)
    metrics.count_earlier_outages(outages)
    return registry, metrics


def build_worker(settings: Settings, broker_url: str, pipeline: Pipeline | None, outages: int,
                 on_outage: Callable[[], object]) -> tuple[Any, WorkerWeb]:
    """The Faust app and its web service (start both: ``faust.Worker(app, web)``).

    ``pipeline``: the stages' model and prompts; by default the configured model (benchmarks pass a scripted one).
    ``outages``: broker outages so far; ``on_outage``: called when the broker becomes unreachable, after the
    outage is logged and counted (:func:`run_worker` restarts the worker in place there).
    """
    app, topics = create_app(settings, broker_url)
    # Metrics first: the retriever (its cache) records into them too.
    registry, metrics = build_metrics(settings, pipeline, outages)
    pipeline = pipeline or build_pipeline(settings)
    retrieval = build_retrieval(settings, pipeline.model, on_cache_lookup=metrics.retrieval_cache)
    for path, report in zip(settings.evidence_files, retrieval.imported):
        log.log(logging.WARNING if report.bad else logging.INFO,
                "imported %s into the knowledge base: %d added, %d already there, %d bad rows%s", path,
                report.added, report.duplicates, len(report.bad),
                "".join(f"; line {b.line}: {b.reason}" for b in report.bad[:5]))
    bootstrap = bootstrap_servers(broker_url)
    offsets = KafkaOffsetReader(bootstrap, app_id(settings))

    async def commit_past(topic: str, partition: int, first: int, last: int) -> None:
        # Faust never saw these offsets as events, so it would not commit past them (faust-streaming #596);
        # its gap record is how it learns that offsets need no acknowledgement.
        await faust_adapter.commit_past_gap(app.consumer, topic, partition, first, last)

    # The guard re-reads where the group stands after every assignment. Counted here rather than read from the
    # group generation: a restarted broker starts a new group at the same number.
    assignments = 0
    broker = BrokerWatch(bootstrap)

    @app.on_partitions_assigned.connect
    async def count_assignment(sender: Any, assigned: Any, **kwargs: Any) -> None:
        nonlocal assignments
        assignments += 1
        aiokafka_adapter.set_fetch_max_wait(faust_adapter.kafka_consumer(app.consumer), FETCH_MAX_WAIT_MS)

    guard = OrderGuard(offsets, generation=lambda: assignments, on_filled=commit_past)
    wire(app, topics, pipeline, retrieval.retriever, settings.partitions, retrieval.kb_updater, metrics, guard)
    short_names = {topic_name(settings, n): n for n in TOPIC_NAMES if n in CONSUMED}

    @app.task
    async def load_model() -> None:
        # Load at start-up so a bad model path stops the worker at once, not at the first turn.
        await pipeline.model.load()
        await pipeline.nli.load()
        if pipeline.judge is not None:
            await pipeline.judge.load()
        # Each prompt family's fixed instructions are read once now, so no turn waits for them.
        warmed = await pipeline.warm_up()
        log.info("model ready: %d prompt tokens of fixed instructions evaluated and kept", warmed)
        if retrieval.web is not None:
            try:
                await asyncio.to_thread(retrieval.web.pool.warm)
            except RetrievalError as exc:
                # Not fatal: each web query will report the same reason as "no evidence from web".
                log.warning("web retriever: %s", exc)
        stats = await asyncio.to_thread(retrieval.kb.stats)
        log.info("worker ready: knowledge base %s with %d current documents, web retriever %s, model %s",
                 stats.path, stats.current, "on" if retrieval.web else "off",
                 model_name(settings))

    @app.on_before_shutdown.connect
    async def close_retrieval(sender: Any, **kwargs: Any) -> None:
        # Browsers are separate processes: quit them, or they outlive the worker.
        retrieval.close()
        pipeline.nli.close()
        if pipeline.judge is not None:
            pipeline.judge.close()
        await offsets.close()
        if retrieval.cache is not None:
            cache = retrieval.cache
            log.info("retrieval cache: %d hits, %d misses (hit rate %.0f%%)", cache.hits, cache.misses,
                     100 * cache.hit_rate)

    @app.timer(interval=BROKER_PROBE_INTERVAL)
    async def watch_broker() -> None:
        change = await broker.check()
        # Only the start of an outage matters: the worker restarts then, so it never sees the broker come back.
        if change is None or change.up:
            return
        metrics.broker_lost()
        log.error("the broker is unreachable (%s): restarting this worker in place; it starts again once the broker"
                  " is back, from the last committed offsets", change.reason)
        retrieval.close()  # browsers are child processes: quit them before the process is replaced
        on_outage()

    @app.timer(interval=LAG_INTERVAL)
    async def watch_partitions() -> None:
        # One read of the high watermarks serves both the stall check and the lag metric.
        highwaters = await stage_highwaters(app.consumer, short_names)
        for tp, end in highwaters.items():
            if end is not None:
                offset = await guard.stalled(tp.topic, tp.partition, int(end))
                if offset is not None:
                    await app.consumer.seek(tp, offset)
                    metrics.partition_refetched(STAGE_OF_TOPIC[short_names[tp.topic]])
        if settings.metrics_enabled:
            metrics.set_consumer_lag(await consumer_lags(app.consumer, short_names, highwaters))

    feed = AlertFeed(bootstrap, topic_name(settings, "alerts"), AlertBuffer())
    web = WorkerWeb(settings.metrics_host, settings.metrics_port, feed, registry)
    return app, web


def check_port(settings: Settings) -> None:
    """A clear error before start-up rather than a crash of the web service inside Faust."""
    with socket.socket() as s:
        # As aiohttp binds: a port left in TIME_WAIT by a stopped worker is free, a listening one is not.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((settings.metrics_host, settings.metrics_port))
            return
        except OSError:
            pass
        raise StreamError(
            f"port {settings.metrics_port} on {settings.metrics_host} is taken (another worker?): give each worker"
            " on a host its own HALLUWATCH_METRICS_PORT (--metrics-port)"
        ) from None


def faust_worker(app: Any, *services: Any, loglevel: str) -> Any:
    """Faust's worker for ``app`` and ``services``, logging at ``loglevel`` for its whole life."""
    import faust

    worker = faust.Worker(app, *services, loglevel=loglevel, quiet=True)
    # Faust's start-up spinner lowers the root logger to DEBUG (to animate on every record) and never
    # raises it again, so every debug line of Faust and aiokafka would be built and handled for the life
    # of the worker: a few percent of its CPU (docs/results/bench-scripted-profile.txt). No spinner.
    worker.spinner = None
    return worker


async def wait_then_create_topics(settings: Settings, bootstrap: str, outages: int) -> None:
    """Wait until the broker accepts connections, then create halluwatch's topics as configured.

    Prometheus keeps seeing a waiting worker: ``/metrics`` is served meanwhile, with ``broker_up`` at 0. The
    topics are created before the worker starts so that no client creates them first with the broker's default
    partition count (the embedded broker does, on a producer's first request)."""
    addresses = parse_bootstrap(bootstrap)
    registry, metrics = build_metrics(settings, None, outages)
    runner = None
    if registry is not None and await reachable(addresses) is not None:
        metrics.waiting_for_broker()
        runner = await serve(make_web_app(AlertBuffer(), registry), settings.metrics_host, settings.metrics_port)
    try:
        await wait_for_broker(addresses, BROKER_PROBE_INTERVAL)
    finally:
        if runner is not None:
            await runner.cleanup()
    try:
        await ensure_topics(bootstrap, settings)
    except (KafkaError, OSError, asyncio.TimeoutError) as exc:
        log.warning("could not create halluwatch's topics (%s); the worker creates the ones it reads as it starts", exc)


def run_worker(settings: Settings, broker_url: str, loglevel: str = "WARNING", pipeline: Pipeline | None = None,
               before_restart: Callable[[], object] | None = None) -> None:
    """Run until SIGINT/SIGTERM; more workers with the same settings share the partitions.

    On a broker outage the worker restarts in place and waits for the broker (:mod:`stream.broker_outage`);
    ``before_restart`` stops what the restart would leave behind (the embedded broker of ``halluwatch worker``).
    """
    check_port(settings)
    outages = outages_seen(os.environ)
    bootstrap = bootstrap_servers(broker_url)
    asyncio.run(wait_then_create_topics(settings, bootstrap, outages))

    def restart() -> None:
        if before_restart is not None:
            before_restart()
        restart_in_place(outages + 1)

    app, web = build_worker(settings, broker_url, pipeline, outages, on_outage=restart)
    worker = faust_worker(app, web, loglevel=loglevel)
    quiet_client_retries()  # after Faust set up logging: one line per kind of retry message per 30 s
    try:
        worker.execute_from_commandline()
    except SystemExit as stopped:
        # The broker died while Faust was starting (creating its topics, joining the group): Faust gives up
        # before the outage probe runs. Same outage, same cure.
        if stopped.code and asyncio.run(reachable(parse_bootstrap(bootstrap))) is not None:
            log.error("the worker stopped because the broker went away while it started: restarting in place")
            restart()
        raise
