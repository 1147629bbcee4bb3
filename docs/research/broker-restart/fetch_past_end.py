"""Does the embedded broker (Tansu 0.6.0) answer a fetch past a log's end with OFFSET_OUT_OF_RANGE?

    python docs/research/broker-restart/fetch_past_end.py

Session 19: no. The consumer positioned at 20 on a 3-record log gets nothing, and still nothing once the log
holds 6: it waits until the log reaches 20. A real Kafka answers OFFSET_OUT_OF_RANGE and the consumer resets.
"""
import asyncio
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from stream.app import bootstrap_servers
from stream.broker import EmbeddedBroker


async def main():
    broker = EmbeddedBroker().start()
    bs = bootstrap_servers(broker.url)
    p = AIOKafkaProducer(bootstrap_servers=bs); await p.start()
    for i in range(3): await p.send_and_wait("t1", b"x%d" % i, partition=0)
    c = AIOKafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False, auto_offset_reset="earliest")
    await c.start()
    tp = TopicPartition("t1", 0)
    c.assign([tp]); c.seek(tp, 20)
    t = time.monotonic()
    got = await c.getmany(tp, timeout_ms=3000)
    print("after 3s:", [(r.offset, r.value) for r in got.get(tp, [])], "position", await c.position(tp), time.monotonic()-t)
    for i in range(3): await p.send_and_wait("t1", b"y%d" % i, partition=0)
    got = await c.getmany(tp, timeout_ms=3000)
    print("after more:", [(r.offset, r.value) for r in got.get(tp, [])], "position", await c.position(tp))
    await c.stop(); await p.stop(); broker.stop()
asyncio.run(main())
