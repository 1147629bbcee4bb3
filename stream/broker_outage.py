"""What a worker does when it loses the broker: it restarts in place, then waits for the broker to come back.

Why not ride the outage out inside the running process: a broker that keeps
its logs (any Kafka with disks) would allow it, but the embedded one keeps
everything in memory and comes back with no topics, no consumer group and logs
that start at offset 0 again. Then everything the worker's Kafka clients still
hold describes logs that are gone: fetch positions past the ends of the new
logs, acknowledged offsets Faust would commit into the new group, messages
fetched and not yet handled. Worse, the producer sends the outputs it buffered
during the outage as soon as the broker listens again, before anyone has
created the topics, and the embedded broker (Tansu 0.6.0) takes a record for a
topic that does not exist, answers with an offset, and leaves that topic name
broken until it restarts again: nothing written there can be read, and later
writes fail. Measured in ``docs/research/broker-restart/``: killed mid-stream,
the worker verified none of the turns published after the restart within two
minutes.

So on an outage the worker replaces itself with a fresh run of its own command
line (same PID, log and metrics port; :func:`restart_in_place`), which drops
those buffers before they can reach a restarted broker. The fresh run waits
until the broker accepts connections (:func:`wait_for_broker`), serving
``/metrics`` meanwhile with ``halluwatch_broker_up`` at 0, creates the topics
as configured and starts. Nothing committed is lost: a broker with disks hands
the uncommitted turns over again (their outputs carry the same ids), and what a
memory-only broker forgot is gone with it either way. A broker restarted within
a second of its death (before the worker's probe notices) can still receive
buffered records; that case is not handled.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import NoReturn

from stream.broker_watch import reachable

log = logging.getLogger("halluwatch.stream")
# Carries the outage count into the restarted run, so halluwatch_broker_outages_total keeps counting. Set by
# the worker itself when it restarts; not a setting.
OUTAGES_VARIABLE = "HALLUWATCH_BROKER_OUTAGES_SEEN"
WAITING_NOTE_EVERY = 60.0  # seconds between reminders that the worker is still waiting


def outages_seen(environ: Mapping[str, str]) -> int:
    """How many broker outages this worker restarted after (0 on a first start)."""
    value = environ.get(OUTAGES_VARIABLE, "")
    return int(value) if value.isdigit() else 0


def restart_in_place(outages: int) -> NoReturn:
    """Replace this process with a fresh run of its own command line: same PID, environment (plus the outage
    count) and output. Files and sockets Python opened are not inherited (PEP 446), so the metrics port is free
    for the new run; child processes are not stopped by this, so stop them first."""
    logging.shutdown()  # flushes every handler: the new run appends to the same log
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, {**os.environ, OUTAGES_VARIABLE: str(outages)})


async def wait_for_broker(
    addresses: Sequence[tuple[str, int]], interval: float = 1.0,
    probe: Callable[[Sequence[tuple[str, int]]], Awaitable[str | None]] = reachable,
    clock: Callable[[], float] = time.monotonic,
) -> float:
    """Return once any of ``addresses`` accepts a connection; the seconds waited (0.0 when it did at once)."""
    reason = await probe(addresses)
    if reason is None:
        return 0.0
    started = noted = clock()
    log.error("the broker is unreachable (%s): waiting for it; the worker starts once it accepts connections",
              reason)
    while reason is not None:
        await asyncio.sleep(interval)
        reason = await probe(addresses)
        if reason is not None and clock() - noted >= WAITING_NOTE_EVERY:
            noted = clock()
            log.error("still waiting for the broker after %.0fs (%s)", noted - started, reason)
    waited = clock() - started
    log.warning("the broker accepts connections after %.1fs of waiting: starting the worker", waited)
    return waited
