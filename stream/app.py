"""The Faust app factory and halluwatch's topics.

Every topic carries raw bytes: halluwatch decodes and validates messages in
its own code (``schemas.codec``), because a message Faust's codec cannot
decode is acknowledged and never dead-lettered. Every message is keyed by
``conversation_id``, so a conversation stays ordered on one partition.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from stream.settings import Settings

# The topic names of DESIGN.md, without the configurable prefix.
TOPIC_NAMES = ("turns", "claimsets", "evidence", "verdicts", "corrections", "alerts", "kb-updates", "dlq")
# Records are bounded well below this (see schemas.records); the producer refuses anything larger.
MAX_MESSAGE_BYTES = 1_000_000
# The consumer commits what it has processed after this many events or this many seconds, whichever comes
# first (and on every rebalance and shutdown). Committing after every event cost about a tenth of a
# scripted worker's CPU (a commit request plus Faust's log table per event). A worker killed between commits
# redoes at most this much; the redone turns' outputs carry the same ids and are dropped downstream, and
# the justify agent's table of delivered ids keeps alerts single.
COMMIT_EVERY_EVENTS = 100
COMMIT_INTERVAL_SECONDS = 1.0


@dataclass(frozen=True)
class Topics:
    turns: Any
    claimsets: Any
    evidence: Any
    verdicts: Any
    corrections: Any
    alerts: Any
    kb_updates: Any
    dlq: Any

    def all(self) -> list[Any]:
        return [getattr(self, f.name) for f in fields(self)]


def topic_name(settings: Settings, name: str) -> str:
    return f"{settings.topic_prefix}{name}"


def app_id(settings: Settings) -> str:
    """The Faust app id, which is also the consumer group: one per topic prefix, shared by its workers."""
    return f"{settings.topic_prefix}worker"


def bootstrap_servers(broker_url: str) -> str:
    """``kafka://a:9092;kafka://b:9092`` -> ``a:9092,b:9092`` for aiokafka clients."""
    parts = [p.strip() for p in broker_url.replace(";", ",").split(",") if p.strip()]
    return ",".join(p.split("://", 1)[-1] for p in parts)


def create_app(settings: Settings, broker_url: str) -> tuple[Any, Topics]:
    import faust

    (settings.data_dir / "faust").mkdir(parents=True, exist_ok=True)
    app = faust.App(
        app_id(settings),
        broker=broker_url,
        store="memory://",
        topic_partitions=settings.partitions,
        topic_replication_factor=1,
        key_serializer="raw",
        value_serializer="raw",
        processing_guarantee="at_least_once",
        consumer_auto_offset_reset="earliest",
        producer_max_request_size=MAX_MESSAGE_BYTES,
        # One record per batch. The embedded broker (Tansu 0.6.0) reports a partition's end offset as the last
        # batch's base offset + 1, so a last batch of several records hides its tail: Faust's table recovery
        # then finds its own changelog offsets past the end and crashes the worker (ConsistencyError).
        producer_max_batch_size=1,
        broker_session_timeout=settings.session_timeout,
        broker_heartbeat_interval=max(1.0, settings.session_timeout / 5),
        broker_commit_every=COMMIT_EVERY_EVENTS,
        broker_commit_interval=COMMIT_INTERVAL_SECONDS,
        web_enabled=False,
        datadir=str(settings.data_dir / "faust"),
    )
    made = {
        name.replace("-", "_"): app.topic(
            topic_name(settings, name), key_type=bytes, value_type=bytes, partitions=settings.partitions
        )
        for name in TOPIC_NAMES
    }
    return app, Topics(**made)
