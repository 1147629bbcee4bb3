"""Noticing that the broker went away and came back, and saying so once.

While the broker is down, aiokafka retries on its own but logs every failed
attempt (thousands of lines a minute) and Faust's timers overlap; nothing
says plainly "the broker is down since T". :class:`BrokerWatch` probes the
bootstrap addresses with a TCP connect on a timer and reports each change once:
a log line and the ``halluwatch_broker_up`` / ``halluwatch_broker_outages_total``
metrics. :class:`RepeatFilter` keeps the client libraries' retry messages to
one line per kind per interval, with a count of those left out.

The worker restarts in place when an outage starts, and waits for the broker
before it starts again (:mod:`stream.broker_outage` says why).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger("halluwatch.stream")
PROBE_TIMEOUT = 2.0  # seconds for one TCP connect
# aiokafka's modules that log connection retries (checked on aiokafka 0.14.0).
CLIENT_LOGGERS = ("aiokafka", "aiokafka.conn", "aiokafka.client", "aiokafka.cluster", "aiokafka.consumer.consumer",
                  "aiokafka.consumer.fetcher", "aiokafka.consumer.group_coordinator", "aiokafka.producer.producer",
                  "aiokafka.producer.sender", "aiokafka.admin.client")


@dataclass(frozen=True)
class BrokerChange:
    """The broker went down (``up`` False) or came back after ``down_seconds``."""

    up: bool
    down_seconds: float = 0.0
    reason: str = ""


async def reachable(addresses: Sequence[tuple[str, int]], timeout: float = PROBE_TIMEOUT) -> str | None:
    """None when any address accepts a TCP connection; otherwise why the last one did not."""
    reason = "no bootstrap address"
    for host, port in addresses:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            reason = f"{host}:{port}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__}"
            continue
        writer.close()
        return None
    return reason


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """``host:port,host:port`` as (host, port) pairs."""
    pairs = []
    for part in bootstrap.split(","):
        host, _, port = part.strip().rpartition(":")
        pairs.append((host.strip("[]"), int(port)))
    return pairs


class BrokerWatch:
    """The broker's reachability over time; :meth:`check` returns a change when there is one."""

    def __init__(self, bootstrap: str, probe: Callable[[Sequence[tuple[str, int]]], Awaitable[str | None]] = reachable,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.addresses = parse_bootstrap(bootstrap)
        self._probe = probe
        self._clock = clock
        self.up = True
        self.outages = 0
        self._down_since = 0.0

    async def check(self) -> BrokerChange | None:
        reason = await self._probe(self.addresses)
        if reason is None and not self.up:
            self.up = True
            return BrokerChange(up=True, down_seconds=self._clock() - self._down_since)
        if reason is not None and self.up:
            self.up, self._down_since = False, self._clock()
            self.outages += 1
            return BrokerChange(up=False, reason=reason)
        return None


class RepeatFilter(logging.Filter):
    """Lets one record per message template through per ``interval`` seconds; notes how many were left out."""

    def __init__(self, interval: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._interval = interval
        self._clock = clock
        self._last: dict[tuple[str, object], tuple[float, int]] = {}  # (logger, template) -> (last shown, left out)

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.msg)
        now = self._clock()
        shown, left_out = self._last.get(key, (float("-inf"), 0))
        if now - shown < self._interval:
            self._last[key] = (shown, left_out + 1)
            return False
        self._last[key] = (now, 0)
        if left_out:
            record.msg = f"{record.msg} (and {left_out} more like it in the last {now - shown:.0f}s)"
        return True


def quiet_client_retries(interval: float = 30.0) -> RepeatFilter:
    """Install one :class:`RepeatFilter` on the Kafka client's loggers (their retry messages repeat)."""
    repeat = RepeatFilter(interval)
    # A filter on a logger sees only records logged on that logger, not its children's: name each module.
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).addFilter(repeat)
    return repeat
