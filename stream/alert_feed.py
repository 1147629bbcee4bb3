"""The recent alerts of the whole deployment, for the alerts page.

Each worker reads the ``alerts`` topic on its own (a consumer with no group, all
partitions assigned), so its page shows every alert no matter which worker
raised it. It starts up to ``capacity`` messages before the end of each
partition, so a freshly started page already shows recent history, and keeps
at most ``capacity`` alerts in memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from schemas import Alert, RecordError, decode, to_dict
from stream import aiokafka_adapter

log = logging.getLogger("halluwatch.alerts")
DEFAULT_CAPACITY = 500


@dataclass(frozen=True)
class AlertQuery:
    bot: str = ""
    severity: str = ""
    limit: int = 100


class AlertBuffer:
    """A bounded ring of alerts, newest last; one entry per alert id (redeliveries replace nothing)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        self.capacity = capacity
        self._alerts: deque[Alert] = deque(maxlen=capacity)
        self._ids: set[str] = set()

    def add(self, alert: Alert) -> bool:
        if alert.alert_id in self._ids:
            return False
        if len(self._alerts) == self.capacity:
            self._ids.discard(self._alerts[0].alert_id)
        self._alerts.append(alert)
        self._ids.add(alert.alert_id)
        return True

    def query(self, q: AlertQuery) -> list[Alert]:
        """Matching alerts, newest first (by when they were raised)."""
        found = [
            a for a in self._alerts
            if (not q.bot or a.bot == q.bot) and (not q.severity or a.severity.value == q.severity)
        ]
        found.sort(key=lambda a: a.raised_at, reverse=True)
        return found[: max(0, q.limit)]

    def bots(self) -> list[str]:
        return sorted({a.bot for a in self._alerts})

    def as_json(self, q: AlertQuery) -> dict[str, Any]:
        return {"alerts": [to_dict(a) for a in self.query(q)], "bots": self.bots(), "total": len(self._alerts)}


class AlertFeed:
    """Fills an :class:`AlertBuffer` from the alerts topic until stopped."""

    def __init__(self, bootstrap: str, topic: str, buffer: AlertBuffer):
        self.bootstrap = bootstrap
        self.topic = topic
        self.buffer = buffer
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()  # set once positioned on every partition

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def _run(self) -> None:
        # Retry forever: the topic may not exist yet (no worker created it) or the broker may be restarting.
        while True:
            try:
                await self._consume()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the page must outlive broker hiccups; logged, then retried
                log.warning("alerts feed from %s failed (%s), retrying in 2 s", self.topic, exc)
                await asyncio.sleep(2.0)

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False, group_id=None)
        await consumer.start()
        try:
            partitions = consumer.partitions_for_topic(self.topic)
            while not partitions:
                await aiokafka_adapter.refresh_metadata(consumer)
                partitions = consumer.partitions_for_topic(self.topic)
                if not partitions:
                    await asyncio.sleep(1.0)
            tps = [TopicPartition(self.topic, p) for p in sorted(partitions)]
            consumer.assign(tps)
            starts = await consumer.beginning_offsets(tps)
            ends = await consumer.end_offsets(tps)
            for tp in tps:
                consumer.seek(tp, max(starts[tp], ends[tp] - self.buffer.capacity))
            self.ready.set()
            while True:
                batches = await consumer.getmany(timeout_ms=500)
                for messages in batches.values():
                    for message in messages:
                        self._add(message)
        finally:
            await consumer.stop()

    def _add(self, message: Any) -> None:
        try:
            self.buffer.add(decode(Alert, message.value))
        except RecordError as exc:
            # Only halluwatch writes this topic; a bad record there is a bug elsewhere, not a reason to stop.
            log.warning("skipping an invalid alert at %s[%s]@%s: %s", message.topic, message.partition, message.offset, exc)
