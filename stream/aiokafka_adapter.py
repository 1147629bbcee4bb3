"""Every use of aiokafka beyond its public API, in one place.

A consumer that assigns partitions itself (the alerts feed, the replay
collector) must learn about a topic created after it started; aiokafka
refreshes the metadata it tracks only through ``AIOKafkaConsumer._client``.
The workers' consumer is created by Faust with a fixed fetch wait, which
:func:`set_fetch_max_wait` changes on the running fetcher
(``AIOKafkaConsumer._fetcher._fetch_max_wait_ms``). Nothing else in
halluwatch touches aiokafka's private attributes.

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


def set_fetch_max_wait(consumer: Any, milliseconds: int) -> None:
    """How long a started consumer's fetch may wait at the broker for data; applies from its next fetch."""
    consumer._fetcher._fetch_max_wait_ms = milliseconds


PRIVATE_ATTRIBUTES = ("AIOKafkaConsumer._client.force_metadata_update", "AIOKafkaConsumer._fetch_max_wait_ms")


def missing_private_attributes(consumer: Any) -> list[str]:
    """Which of PRIVATE_ATTRIBUTES an aiokafka consumer lacks (empty when the installed aiokafka fits).

    The fetcher exists only once the consumer runs; it takes ``_fetch_max_wait_ms`` from the consumer,
    under the same name, so the consumer's attribute stands in for it here."""
    client = getattr(consumer, "_client", None)
    present = {
        "AIOKafkaConsumer._client.force_metadata_update": callable(getattr(client, "force_metadata_update", None)),
        "AIOKafkaConsumer._fetch_max_wait_ms": isinstance(getattr(consumer, "_fetch_max_wait_ms", None), int),
    }
    return [name for name in PRIVATE_ATTRIBUTES if not present[name]]
