"""BrokerWatch reports each outage once; RepeatFilter keeps retry messages to a line per kind."""

import logging

from stream.broker import free_port
from stream.broker_watch import BrokerChange, BrokerWatch, RepeatFilter, parse_bootstrap, reachable


def test_bootstrap_lists_are_split_into_hosts_and_ports() -> None:
    assert parse_bootstrap("127.0.0.1:9092, kafka-2:9093") == [("127.0.0.1", 9092), ("kafka-2", 9093)]
    assert parse_bootstrap("[::1]:9092") == [("::1", 9092)]


async def test_an_outage_is_reported_when_it_starts_and_when_it_ends() -> None:
    answers = iter([None, "refused", "refused", "refused", None, None])
    now = [0.0]

    async def probe(addresses):  # type: ignore[no-untyped-def]
        now[0] += 1.0
        return next(answers)

    watch = BrokerWatch("127.0.0.1:9092", probe=probe, clock=lambda: now[0])
    changes = [await watch.check() for _ in range(6)]
    assert changes == [None, BrokerChange(up=False, reason="refused"), None, None,
                       BrokerChange(up=True, down_seconds=3.0), None]
    assert watch.outages == 1 and watch.up


async def test_the_probe_tells_an_open_port_from_a_closed_one() -> None:
    import asyncio

    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        assert await reachable([("127.0.0.1", free_port()), ("127.0.0.1", port)]) is None
    finally:
        server.close()
        await server.wait_closed()
    reason = await reachable([("127.0.0.1", port)])
    assert reason is not None and str(port) in reason


def test_repeated_messages_are_shown_once_per_interval_with_a_count() -> None:
    now = [0.0]
    repeat = RepeatFilter(interval=30.0, clock=lambda: now[0])

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("aiokafka.conn", logging.ERROR, __file__, 1, msg, ("node 1",), None)

    assert repeat.filter(record("Unable connect to node %s"))
    now[0] = 10.0
    assert not repeat.filter(record("Unable connect to node %s"))
    assert not repeat.filter(record("Unable connect to node %s"))
    assert repeat.filter(record("Failed fetch messages from %s"))  # another kind of message: shown
    now[0] = 31.0
    shown = record("Unable connect to node %s")
    assert repeat.filter(shown)
    assert shown.getMessage() == "Unable connect to node node 1 (and 2 more like it in the last 31s)"
