"""Every use of aiokafka beyond its public API, in one place.

A consumer that assigns partitions itself (the alerts feed, the replay
collector) must learn about a topic created after it started; aiokafka
refreshes the metadata it tracks only through ``AIOKafkaConsumer._client``.
Nothing else in halluwatch touches it.

Checked against aiokafka 0.14.0 (the range is pinned in pyproject.toml);
:func:`missing_private_attributes` is called by a unit test on a real
consumer, so an upgrade that drops it fails there by name.
"""

from __future__ import annotations

from typing import Any

CHECKED_VERSIONS = ("0.14.0",)


async def refresh_metadata(consumer: Any) -> None:
    """Fetch the cluster's topics and partitions now, so ``partitions_for_topic`` sees new topics."""
    await consumer._client.force_metadata_update()


PRIVATE_ATTRIBUTES = ("AIOKafkaConsumer._client.force_metadata_update",)


def missing_private_attributes(consumer: Any) -> list[str]:
    """Which of PRIVATE_ATTRIBUTES an aiokafka consumer lacks (empty when the installed aiokafka fits)."""
    client = getattr(consumer, "_client", None)
    return [] if callable(getattr(client, "force_metadata_update", None)) else list(PRIVATE_ATTRIBUTES)
