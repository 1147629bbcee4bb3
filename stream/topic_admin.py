"""Creating halluwatch's topics ahead of the workers, for tools that publish or subscribe first."""

from __future__ import annotations

from stream.app import TOPIC_NAMES, topic_name
from stream.settings import Settings


async def ensure_topics(bootstrap: str, settings: Settings) -> None:
    """Create halluwatch's topics if they are missing, so a consumer can subscribe before any worker ran."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [
            NewTopic(topic_name(settings, n), num_partitions=settings.partitions, replication_factor=1)
            for n in TOPIC_NAMES
            if topic_name(settings, n) not in existing
        ]
        if missing:
            try:
                await admin.create_topics(missing)
            except TopicAlreadyExistsError:
                pass  # a worker created them meanwhile
    finally:
        await admin.close()
