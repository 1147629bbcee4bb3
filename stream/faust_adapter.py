"""Every use of faust-streaming beyond its public API, in one place.

The order guard (:mod:`stream.order_guard`) must tell Faust that offsets it
never delivered as events need no acknowledgement (its gap record), and the
lag metric reads the offset Faust last committed per partition; Faust has no
public call for either. They use ``Consumer._add_gap`` and
``Consumer._committed_offset``. Faust also hides the aiokafka consumer it
runs (``Consumer._thread._consumer``), whose fetch wait it fixes at 1.5 s.
Nothing else in halluwatch touches Faust's private attributes.

Checked against faust-streaming 0.15.3 (the range is pinned in
pyproject.toml). :func:`missing_private_attributes` lists what a new version
no longer has; a unit test calls it on a real consumer, so an upgrade fails
there with the attribute's name instead of silently losing commits.
"""

from __future__ import annotations

from typing import Any

CHECKED_VERSIONS = ("0.15.3",)


async def commit_past_gap(consumer: Any, topic: str, partition: int, first: int, last: int) -> None:
    """Record offsets ``first``..``last`` of one partition as needing no acknowledgement, so commits pass them."""
    from faust.types import TP

    await consumer._add_gap(TP(topic, partition), first, last)


def committed_offset(consumer: Any, tp: Any) -> int | None:
    """The offset Faust last committed for ``tp`` (the next one to read), None before its first commit."""
    return consumer._committed_offset.get(tp)


def kafka_consumer(consumer: Any) -> Any:
    """The aiokafka consumer a started Faust consumer runs on (None before it started)."""
    return consumer._thread._consumer


PRIVATE_ATTRIBUTES = ("Consumer._add_gap", "Consumer._committed_offset", "Consumer._thread._consumer")


def missing_private_attributes(consumer: Any) -> list[str]:
    """Which of PRIVATE_ATTRIBUTES a Faust consumer lacks (empty when the installed Faust fits)."""
    present = {
        "Consumer._add_gap": callable(getattr(consumer, "_add_gap", None)),
        "Consumer._committed_offset": hasattr(getattr(consumer, "_committed_offset", None), "get"),
        "Consumer._thread._consumer": hasattr(getattr(consumer, "_thread", None), "_consumer"),
    }
    return [name for name in PRIVATE_ATTRIBUTES if not present[name]]
