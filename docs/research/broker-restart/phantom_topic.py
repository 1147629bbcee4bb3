"""What does the embedded broker (Tansu 0.6.0) do with a record for a topic it no longer has?

    python docs/research/broker-restart/phantom_topic.py

Session 20: a producer that knew topic "t" before the broker was restarted sends to it afterwards, using the
partitions it remembers (no new metadata request, as aiokafka does when it resends what it buffered during an
outage). Without "t" created first, the broker answers with offsets (0, 0, 1) but a reader gets nothing from
offset 0, and the name stays broken: deleting it answers UNKNOWN_TOPIC, creating it again succeeds, and every
later write to it fails with UnknownError (-1). With "t" created first everything reads back. A producer that
has never seen "t" asks for metadata first, the broker then creates "t" properly (with 4 partitions), and that
works too. This is why a worker restarts in place on an outage (stream/broker_outage.py): what it buffered
must not reach the restarted broker.
"""
import asyncio
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from stream.broker import EmbeddedBroker, free_port


async def create(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 2, 1)])
    finally:
        await admin.close()


async def read(bootstrap: str, topic: str):  # type: ignore[no-untyped-def]
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in (0, 1)]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
    got = await consumer.getmany(timeout_ms=3000)
    await consumer.stop()
    return {tp.partition: [r.offset for r in records] for tp, records in got.items()}


async def main(create_first: bool) -> None:
    port = free_port()
    broker = EmbeddedBroker(port=port).start()
    await create(broker.bootstrap, "t")
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    await producer.send_and_wait("t", b"before", partition=0)
    broker.kill()
    await asyncio.sleep(2)
    again = EmbeddedBroker(port=port).start()
    await asyncio.sleep(3)  # the producer reconnects on its own
    if create_first:
        await create(again.bootstrap, "t")
    try:
        for i in range(3):
            sent = await asyncio.wait_for(producer.send_and_wait("t", b"after%d" % i, partition=i % 2), 10)
            print("sent to partition", sent.partition, "offset", sent.offset)
        print("read back from offset 0:", await read(again.bootstrap, "t"))
    finally:
        await producer.stop()
        again.stop()


if __name__ == "__main__":
    asyncio.run(main(create_first="--create-first" in sys.argv))
