"""Does the embedded broker accept an offset commit from a member its group does not know?

    python docs/research/broker-restart/commit_without_member.py

Session 19: no (error 25, UNKNOWN_MEMBER_ID; nothing committed). So a worker cannot put offsets of the lost
log into a restarted broker's group before it has joined again; after it has joined, it can.
"""
import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.commit import OffsetCommitRequest
from aiokafka.protocol.coordination import FindCoordinatorRequest as GCR

from stream.app import bootstrap_servers
from stream.broker import EmbeddedBroker


async def main():
    broker = EmbeddedBroker().start()
    bs = bootstrap_servers(broker.url)
    p = AIOKafkaProducer(bootstrap_servers=bs); await p.start()
    for i in range(3): await p.send_and_wait("t1", b"x", partition=0)
    await p.stop()
    client = AIOKafkaClient(bootstrap_servers=bs); await client.bootstrap()
    coord = await client.send(client.get_random_node(), GCR("ghostgroup", 0))
    print("coordinator", coord)
    req = OffsetCommitRequest("ghostgroup", 7, "ghost-member", -1, [("t1", [(0, 20, "")])])
    resp = await client.send(coord.coordinator_id, req)
    print("commit response", resp)
    await client.close()
    c = AIOKafkaConsumer(bootstrap_servers=bs, group_id="ghostgroup", enable_auto_commit=False)
    await c.start()
    print("committed now:", await c.committed(TopicPartition("t1", 0)))
    await c.stop()
    broker.stop()
asyncio.run(main())
