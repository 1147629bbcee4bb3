"""Chatbots publish with other clients than halluwatch's own: librdkafka through confluent-kafka and kcat.

Turns go in with keys, headers and every compression codec librdkafka sends;
a running worker (scripted model: the transport is under test here, not the
verdict) verifies them, and the verdicts, alerts and dead letters are read back
with the same client. Both read by assigning partitions, not by joining a
group: librdkafka's JoinGroup does not complete against the embedded broker
(Tansu 0.6.0); against Apache Kafka both ways work.

kcat is Debian's. Debian bookworm links it to librdkafka 2.0.2, which cannot
parse the embedded broker's ApiVersions answer ("Read underflow" at its tagged
fields), so the test runs the same kcat binary over the librdkafka 2.16 that
the confluent-kafka wheel bundles.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from agents.testing.stream_model import FALSE_ONE_IN, label_of
from schemas import Alert, DeadLetter, Label, Role, Turn, TurnVerdict, decode, encode, ids
from stream.app import bootstrap_servers, topic_name
from stream.broker import EmbeddedBroker
from stream.commands.bench_stream import worker_process
from stream.process import stop
from stream.settings import Settings
from stream.topic_admin import ensure_topics
from tests.integration.test_stream import broker  # noqa: F401 - the session's embedded broker

CODECS = ("none", "gzip", "lz4", "zstd", "snappy")
WAIT = 120.0


def reply(n: int, false: bool) -> str:
    """An assistant reply of one sentence that the scripted model labels false (or true): alerts are certain."""
    for k in range(FALSE_ONE_IN * 20):
        text = f"The harbour in town {n} opened in {1800 + k}."
        if (label_of(text) is Label.FALSE) == false:
            return text
    raise AssertionError("no sentence with the wanted label")


@pytest.fixture
def stream(broker: EmbeddedBroker, tmp_path: Path) -> Iterator[Settings]:  # noqa: F811
    settings = Settings(broker_url=broker.url, topic_prefix=f"c{uuid.uuid4().hex[:8]}.", partitions=2)
    asyncio.run(ensure_topics(bootstrap_servers(broker.url), settings))
    worker = worker_process(settings, str(tmp_path))
    try:
        yield settings
    finally:
        stop(worker)


def read_all(settings: Settings, short: str, wanted: int,
             read: Callable[[str], list[tuple[bytes | None, bytes]]]) -> list[tuple[bytes | None, bytes]]:
    """Read a topic from the start with ``read`` until ``wanted`` messages are there (or time runs out)."""
    deadline = time.monotonic() + WAIT
    while True:
        found = read(topic_name(settings, short))
        if len(found) >= wanted or time.monotonic() > deadline:
            return found
        time.sleep(1)


def turn_bytes(conversation: str, turn_id: str, text: str) -> bytes:
    return encode(Turn(conversation_id=conversation, turn_id=turn_id, role=Role.ASSISTANT, text=text, bot="rd-bot"))


def check_outputs(settings: Settings, sent: dict[str, bool], bad: bytes,
                  read: Callable[[str], list[tuple[bytes | None, bytes]]]) -> None:
    """Every sent turn (conversation id -> planted false) has its verdict keyed by its conversation, the false
    ones their alert, and the bad message its dead letter with the original bytes."""
    verdicts = [(k, decode(TurnVerdict, v)) for k, v in read_all(settings, "verdicts", len(sent), read)]
    assert sorted(v.evidence.claimset.conversation_id for _, v in verdicts) == sorted(sent)
    for key, verdict in verdicts:
        assert key == verdict.evidence.claimset.conversation_id.encode()
        assert (verdict.label is Label.FALSE) == sent[verdict.evidence.claimset.conversation_id]
    planted = sorted(c for c, false in sent.items() if false)
    alerts = [decode(Alert, v) for _, v in read_all(settings, "alerts", len(planted), read)]
    assert sorted(a.conversation_id for a in alerts) == planted
    assert all(a.alert_id == ids.alert_id(a.conversation_id, a.turn_id) for a in alerts)
    letters = [decode(DeadLetter, v) for _, v in read_all(settings, "dlq", 1, read)]
    assert len(letters) == 1 and base64.b64decode(letters[0].original_base64) == bad
    assert letters[0].error_type == "NotJSONError"


# --- confluent-kafka -------------------------------------------------------------------------------


def confluent_read(settings: Settings) -> Callable[[str], list[tuple[bytes | None, bytes]]]:
    from confluent_kafka import Consumer, TopicPartition

    def read(topic: str) -> list[tuple[bytes | None, bytes]]:
        consumer = Consumer({"bootstrap.servers": bootstrap_servers(settings.broker_url or ""),
                             "group.id": f"reader-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                             "enable.partition.eof": True})
        consumer.assign([TopicPartition(topic, p, 0) for p in range(settings.partitions)])
        found, ended = [], set()
        deadline = time.monotonic() + 10
        try:
            while len(ended) < settings.partitions and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is None:
                    continue
                if message.error():
                    ended.add(message.partition())
                    continue
                found.append((message.key(), message.value()))
        finally:
            consumer.close()
        return found

    return read


def test_turns_from_confluent_kafka_in_every_codec_are_verified_and_read_back(stream: Settings) -> None:
    from confluent_kafka import KafkaError, KafkaException, Producer

    bootstrap = bootstrap_servers(stream.broker_url or "")
    sent: dict[str, bool] = {}
    for n, codec in enumerate(CODECS):
        producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5})
        for false in (True, False):
            conversation = f"ck-{codec}-{'false' if false else 'true'}"
            producer.produce(topic_name(stream, "turns"), key=conversation.encode(), value=turn_bytes(conversation, "T1", reply(n, false)),
                             headers=[("bot-version", b"2.1"), ("trace-id", uuid.uuid4().bytes)])
            sent[conversation] = false
        assert producer.flush(30) == 0, f"{codec}: messages left undelivered"
    bad = b"{not json, sent with lz4"
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "lz4"})
    producer.produce(topic_name(stream, "turns"), key=b"ck-bad", value=bad)
    assert producer.flush(30) == 0
    check_outputs(stream, sent, bad, confluent_read(stream))

    # A value over the client's message limit fails in the producer, before it reaches the broker.
    with pytest.raises(KafkaException) as refused:
        producer.produce(topic_name(stream, "turns"), key=b"ck-big", value=b"x" * 2_000_000)
    assert refused.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


# --- kcat ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kcat(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[bytes]]:
    import confluent_kafka

    binary = shutil.which("kcat")
    assert binary, "kcat is missing: `apt-get install kcat` (.ci/run installs it)"
    bundled = sorted((Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs").glob("librdkafka*.so*"))
    assert bundled, "the confluent-kafka wheel bundles no librdkafka: reinstall it from a manylinux wheel"
    libs = tmp_path_factory.mktemp("librdkafka")
    (libs / "librdkafka.so.1").symlink_to(bundled[0])
    env = {**os.environ, "LD_LIBRARY_PATH": str(libs)}

    def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        result = subprocess.run([binary, *args], input=stdin, capture_output=True, env=env, timeout=60)
        assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
        return result

    return run


def test_turns_from_kcat_with_and_without_keys_are_verified_and_read_back(stream: Settings, kcat) -> None:  # type: ignore[no-untyped-def]
    bootstrap = bootstrap_servers(stream.broker_url or "")
    turns = topic_name(stream, "turns")
    sent: dict[str, bool] = {}
    for n, codec in enumerate(CODECS[1:]):
        lines = []
        for false in (True, False):
            conversation = f"kc-{codec}-{'false' if false else 'true'}"
            lines.append(conversation.encode() + b"\t" + turn_bytes(conversation, "T1", reply(10 + n, false)))
            sent[conversation] = false
        kcat("-P", "-b", bootstrap, "-t", turns, "-K", "\t", "-z", codec, "-H", "bot-version=2.1",
             stdin=b"\n".join(lines) + b"\n")
    # No key at all, as a producer that does not know better sends it.
    kcat("-P", "-b", bootstrap, "-t", turns, stdin=turn_bytes("kc-nokey", "T1", reply(20, True)) + b"\n")
    sent["kc-nokey"] = True
    bad = b"not json from kcat"
    kcat("-P", "-b", bootstrap, "-t", turns, "-K", "\t", stdin=b"kc-bad\t" + bad + b"\n")

    def read(topic: str) -> list[tuple[bytes | None, bytes]]:
        out = kcat("-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-J").stdout
        envelopes = [orjson.loads(line) for line in out.splitlines() if line.strip()]
        return [(e["key"].encode() if e["key"] is not None else None, e["payload"].encode()) for e in envelopes]

    check_outputs(stream, sent, bad, read)
