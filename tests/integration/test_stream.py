"""The streaming layer on the real embedded broker with real worker processes and the real model.

Each test gets its own uuid-named topic prefix (and so its own consumer group
and changelog topics); workers run as `halluwatch worker` processes, as in
production, so a kill -9 is a real crash.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import orjson
import pytest

from schemas import ClaimSet, DeadLetter, GroundingDocument, Label, Role, Turn, decode, ids
from stream.app import bootstrap_servers, topic_name
from stream.broker import EmbeddedBroker, free_port
from stream.process import stop
from stream.replay import Collector, LoggedTurn, expected_verdict_ids, publish, wait_for
from stream.settings import Settings
from stream.topic_admin import ensure_topics

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "stream" / "examples" / "demo_evidence.jsonl"
WAIT = 420.0


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def stream_settings(broker: EmbeddedBroker, tmp: Path) -> Settings:
    prefix = f"t{uuid.uuid4().hex[:8]}."
    return Settings(broker_url=broker.url, topic_prefix=prefix, partitions=2, data_dir=tmp, evidence_files=(EVIDENCE,))


def start_worker(settings: Settings, loglevel: str = "WARNING", **extra_env: str) -> subprocess.Popen[bytes]:
    """A worker process; its web server gets a free port unless HALLUWATCH_METRICS_PORT is given."""
    env = {
        **os.environ,
        "HALLUWATCH_TOPIC_PREFIX": settings.topic_prefix,
        "HALLUWATCH_PARTITIONS": str(settings.partitions),
        "HALLUWATCH_DATA_DIR": str(settings.data_dir),
        "HALLUWATCH_EVIDENCE": ",".join(str(p) for p in settings.evidence_files),
        "HALLUWATCH_SESSION_TIMEOUT": "6",
        "HALLUWATCH_N_THREADS": "2",
        "HALLUWATCH_METRICS_PORT": str(free_port()),
        **extra_env,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "stream.cli", "worker", "--broker", settings.broker_url or "", "--loglevel", loglevel],
        env=env, cwd=ROOT,
    )


@pytest.fixture
def workers() -> Iterator[Callable[[Settings], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def make(settings: Settings, loglevel: str = "WARNING", **extra_env: str) -> subprocess.Popen[bytes]:
        process = start_worker(settings, loglevel, **extra_env)
        started.append(process)
        return process

    yield make
    for process in started:
        stop(process)


@pytest.fixture
async def collector(broker: EmbeddedBroker, tmp_path: Path) -> AsyncIterator[tuple[Settings, Collector]]:
    settings = stream_settings(broker, tmp_path)
    bootstrap = bootstrap_servers(broker.url)
    await ensure_topics(bootstrap, settings)
    c = Collector(bootstrap, settings)
    await c.start()
    yield settings, c
    await c.stop()


def turns(conversation: str, *texts: tuple[Role, str]) -> list[LoggedTurn]:
    return [
        LoggedTurn(Turn(conversation_id=conversation, turn_id=f"T{i}", role=role, text=text, bot="test-bot"), None)
        for i, (role, text) in enumerate(texts)
    ]


EIFFEL = turns(
    "conv-eiffel",
    (Role.USER, "Where is the Eiffel Tower?"),
    (Role.ASSISTANT, "The Eiffel Tower is in Berlin and was finished in 1889."),
    (Role.USER, "Thanks!"),
    (Role.ASSISTANT, "You're welcome! Have a nice trip."),
)


async def read_topic(bootstrap: str, topic: str, expected: int, timeout: float = 30.0) -> list[tuple[bytes, bytes]]:
    """(key, value) of the first ``expected`` messages of a topic, from the beginning."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                group_id=f"reader-{uuid.uuid4().hex[:6]}")
    await consumer.start()
    found: list[tuple[bytes, bytes]] = []
    try:
        deadline = time.monotonic() + timeout
        while len(found) < expected and time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=1000)).values():
                found.extend((m.key, m.value) for m in messages)
    finally:
        await consumer.stop()
    return found


async def furthest_stage(bootstrap: str, settings: Settings, missing: list[Turn]) -> str:
    """Where the stream lost or stalled each turn without a verdict: the last topic it reached (a verdict
    here means the collector missed it; dlq, that the test did not recognise the dead letter), at which
    partition and offset, against the consumer group's committed offset there."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from stream.app import app_id

    reached = {t.turn_id: "turns" for t in missing}
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=app_id(settings), enable_auto_commit=False)
    await consumer.start()
    try:
        for topic in ("claimsets", "evidence", "verdicts", "dlq"):
            name = topic_name(settings, topic)
            parts = [TopicPartition(name, p) for p in range(settings.partitions)]
            committed = {tp.partition: await consumer.committed(tp) for tp in parts}
            reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
            await reader.start()
            try:
                reader.assign(parts)
                ends = await reader.end_offsets(parts)
                messages = []
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and any([await reader.position(tp) < ends[tp] for tp in parts]):
                    for batch in (await reader.getmany(timeout_ms=2000)).values():
                        messages.extend(batch)
                for m in messages:
                    record = orjson.loads(m.value)
                    if topic == "dlq":  # what failed is the original message
                        record = orjson.loads(base64.b64decode(record["original_base64"]))
                    claimset = record.get("claimset") or record.get("evidence", {}).get("claimset", {})
                    turn_id = record.get("turn_id") or claimset.get("turn_id")
                    if turn_id in reached:
                        reached[turn_id] = f"{topic}[{m.partition}]@{m.offset} (group committed {committed[m.partition]})"
            finally:
                await reader.stop()
    finally:
        await consumer.stop()
    return ", ".join(f"{k}: {v}" for k, v in sorted(reached.items()))


async def test_conversation_flows_through_every_topic(broker, collector, workers) -> None:
    settings, c = collector
    worker = workers(settings)
    sent = await publish(EIFFEL, bootstrap_servers(broker.url), settings)
    assert await wait_for(c, sent, WAIT, alive=lambda: worker.poll() is None), "no verdicts: is the worker alive?"

    verdict_ids = expected_verdict_ids(sent)
    assert set(verdict_ids) <= set(c.collected.verdicts)
    # The correction and the alert of a turn leave together but on two topics: poll until both are in.
    expected = {make_id(t.conversation_id, t.turn_id) for vid, t in verdict_ids.items()
                for make_id, wanted in ((ids.correction_id, c.collected.verdicts[vid].label is not Label.TRUE),
                                        (ids.alert_id, c.collected.verdicts[vid].label is Label.FALSE)) if wanted}
    deadline = time.monotonic() + 60
    while not expected <= set(c.collected.corrections) | set(c.collected.alerts) and time.monotonic() < deadline:
        await c.poll()
    for vid, turn in verdict_ids.items():
        verdict = c.collected.verdicts[vid]
        assert verdict.verdict_id == ids.verdict_id(turn.conversation_id, turn.turn_id)
        assert verdict.evidence.claimset.turn_id == turn.turn_id
        stages = [t.stage for t in verdict.evidence.claimset.timings + verdict.evidence.timings + verdict.timings]
        assert "segment" in stages and "retrieve" in stages and "verify" in stages
        cid = ids.correction_id(turn.conversation_id, turn.turn_id)
        aid = ids.alert_id(turn.conversation_id, turn.turn_id)
        assert (cid in c.collected.corrections) == (verdict.label is not Label.TRUE)
        assert (aid in c.collected.alerts) == (verdict.label is Label.FALSE)
    # The claim of the second assistant turn is a courtesy: no claims, a true verdict, nothing raised.
    polite = c.collected.verdicts[ids.verdict_id("conv-eiffel", "T3")]
    assert polite.evidence.claimset.claims == () and polite.label is Label.TRUE
    # The factual turn used the dated evidence file.
    factual = c.collected.verdicts[ids.verdict_id("conv-eiffel", "T1")]
    assert any(p.published_at == "2023-05-01" for p in factual.evidence.passages)

    claimsets = await read_topic(bootstrap_servers(broker.url), topic_name(settings, "claimsets"), 2)
    assert [k for k, _ in claimsets] == [b"conv-eiffel", b"conv-eiffel"]
    decoded = [decode(ClaimSet, v) for _, v in claimsets]
    assert [d.claimset_id for d in decoded] == [ids.claimset_id("conv-eiffel", t) for t in ("T1", "T3")]
    # The user's question reached the segmenter as context.
    assert any("Where is the Eiffel Tower?" in line.text for line in decoded[0].context)


GROUNDED = [
    LoggedTurn(Turn(conversation_id="conv-rag", turn_id="T0", role=Role.USER, text="Where is the Eiffel Tower?"), None),
    LoggedTurn(Turn(conversation_id="conv-rag", turn_id="T1", role=Role.ASSISTANT, bot="rag-bot",
                    text="The Eiffel Tower is in Berlin.",
                    grounding=(GroundingDocument(text="The Eiffel Tower is a wrought-iron lattice tower on the Champ de"
                                                      " Mars in Paris, France.",
                                                 url="https://wiki.example/eiffel", title="Eiffel Tower"),)), None),
]


async def test_a_grounded_turn_is_checked_against_its_own_documents(broker, collector, workers) -> None:
    """A retrieval-augmented bot's answer against the document it was given: the worker's knowledge base (the
    demo evidence, which has its own Eiffel passage) is not searched, and the contradiction is alerted."""
    settings, c = collector
    worker = workers(settings)
    sent = await publish(GROUNDED, bootstrap_servers(broker.url), settings)
    assert await wait_for(c, sent, WAIT, alive=lambda: worker.poll() is None)
    verdict = c.collected.verdicts[ids.verdict_id("conv-rag", "T1")]
    assert [(p.url, p.retriever) for p in verdict.evidence.passages] == [("https://wiki.example/eiffel", "grounding")]
    assert "came with" in verdict.evidence.note and verdict.evidence.claimset.grounding == ()
    assert verdict.label is Label.FALSE
    [cited] = {p for v in verdict.claim_verdicts for p in v.cited_passages}
    assert cited == verdict.evidence.passages[0].passage_id
    alert_id = ids.alert_id("conv-rag", "T1")
    deadline = time.monotonic() + 60
    while alert_id not in c.collected.alerts:
        assert time.monotonic() < deadline and worker.poll() is None, "no alert for the contradicted answer"
        await c.poll()


async def test_replaying_twice_raises_no_second_alert(broker, collector, workers) -> None:
    settings, c = collector
    worker = workers(settings)
    bootstrap = bootstrap_servers(broker.url)
    conversation = turns("conv-amazon", (Role.USER, "Where does the Amazon end?"),
                         (Role.ASSISTANT, "The Amazon River flows into the Pacific Ocean."))
    first = await publish(conversation, bootstrap, settings)
    assert await wait_for(c, first, WAIT, alive=lambda: worker.poll() is None)
    verdicts_before = c.collected.deliveries[ids.verdict_id("conv-amazon", "T1")]
    second = await publish(conversation, bootstrap, settings)
    # Wait until the replayed turn produced its verdict again, then for its justify step to pass.
    deadline = time.monotonic() + WAIT
    while c.collected.deliveries[ids.verdict_id("conv-amazon", "T1")] == verdicts_before:
        assert time.monotonic() < deadline and worker.poll() is None
        await c.poll()
    await asyncio.sleep(20)
    await c.poll()
    assert len(second) == 2
    for record_id in (ids.alert_id("conv-amazon", "T1"), ids.correction_id("conv-amazon", "T1")):
        assert c.collected.deliveries[record_id] <= 1, f"{record_id} delivered twice"


async def test_abstained_verdicts_raise_no_alert(broker, collector, workers) -> None:
    settings, c = collector
    # A threshold of 1 makes every verdict that is not already unverifiable abstain.
    worker = workers(settings, HALLUWATCH_ABSTAIN_THRESHOLD="1")
    sent = await publish(EIFFEL[:2], bootstrap_servers(broker.url), settings)
    assert await wait_for(c, sent, WAIT, alive=lambda: worker.poll() is None)
    verdict = c.collected.verdicts[ids.verdict_id("conv-eiffel", "T1")]
    assert verdict.claim_verdicts and verdict.label is Label.UNVERIFIABLE
    for v in verdict.claim_verdicts:
        assert v.label is Label.UNVERIFIABLE and v.sufficiency is not None and v.selective_score is not None
        assert v.abstained == (v.abstained_from is not None)
    assert any(v.abstained for v in verdict.claim_verdicts)
    correction_id = ids.correction_id("conv-eiffel", "T1")
    deadline = time.monotonic() + WAIT
    while correction_id not in c.collected.corrections:
        assert time.monotonic() < deadline and worker.poll() is None
        await c.poll()
    assert ids.alert_id("conv-eiffel", "T1") not in c.collected.alerts


async def test_bad_turns_go_to_dlq_and_the_stream_goes_on(broker, collector, workers) -> None:
    from aiokafka import AIOKafkaProducer

    settings, c = collector
    worker = workers(settings)
    bootstrap = bootstrap_servers(broker.url)
    turn_body = {"conversation_id": "conv-bad", "turn_id": "x9", "role": "assistant", "text": "Paris is in Spain."}
    bad: dict[str, tuple[bytes, bytes | None, str]] = {  # kind: (key, value, what the reason says)
        "malformed": (b"conv-bad", b"{this is not json", "NotJSONError"),
        "schema": (b"conv-bad", orjson.dumps({"conversation_id": "conv-bad", "turn_id": "x1", "text": "no role here"}),
                   "required"),
        "oversized": (b"conv-bad", orjson.dumps({**turn_body, "turn_id": "x2", "text": "A" * 25_000}), "text"),
        "role": (b"conv-bad", orjson.dumps({**turn_body, "turn_id": "x3", "role": "bot"}), "'bot' is not one of"),
        "grounding": (b"conv-bad", orjson.dumps({**turn_body, "turn_id": "x4", "grounding": [{"text": "a"}] * 9}),
                      "grounding"),
        "not UTF-8": (b"conv-bad", b'{"text": "\xff\xfe"}', "NotJSONError"),
        "array": (b"conv-bad", b"[1, 2]", "is not of type 'object'"),
        "null": (b"conv-bad", b"null", "is not of type 'object'"),
        "tombstone": (b"conv-bad", None, "tombstone"),
        "deeply nested": (b"conv-bad", b"[" * 100_000 + b"]" * 100_000, "NotJSONError"),
        "key mismatch": (b"user-77", orjson.dumps(turn_body), "KeyMismatchError"),
    }
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for key, value, _ in bad.values():
            await producer.send_and_wait(topic_name(settings, "turns"), key=key, value=value)
    finally:
        await producer.stop()
    # The next valid turn, with a NUL and an escape sequence in it, is verified with them removed.
    good = await publish(turns("conv-bad", (Role.ASSISTANT, "Alexander Fleming\x00 discovered\x1b penicillin in 1928.")),
                         bootstrap, settings)
    assert await wait_for(c, good, WAIT, alive=lambda: worker.poll() is None)
    verdict = c.collected.verdicts[ids.verdict_id("conv-bad", "T0")]
    assert verdict.evidence.claimset.claims and "\x00" not in verdict.evidence.claimset.claims[0].text

    letters = sorted(c.collected.dead_letters.values(), key=lambda d: d.offset)
    assert len(letters) == len(bad), [d.reason for d in letters]
    for letter, (kind, (key, original, reason)) in zip(letters, bad.items()):
        assert isinstance(letter, DeadLetter)
        assert reason in letter.reason, f"{kind}: {letter.reason}"
        assert letter.source_topic == topic_name(settings, "turns") and letter.key == key.decode()
        assert letter.stage == "segment" and letter.offset >= 0
        assert base64.b64decode(letter.original_base64) == (original or b"")


async def test_killed_worker_loses_no_turn(broker, collector, workers) -> None:
    settings, c = collector
    first = workers(settings)
    bootstrap = bootstrap_servers(broker.url)
    texts = [
        "The Eiffel Tower is in Berlin.",
        "Mount Everest is 8,849 metres tall.",
        "At sea level water boils at 90 degrees Celsius.",
        "The Berlin Wall fell in 1989.",
        "The Amazon River flows into the Pacific Ocean.",
        "Alexander Fleming discovered penicillin in 1928.",
    ]
    logged = [
        LoggedTurn(Turn(conversation_id=f"conv-kill-{i % 3}", turn_id=f"K{i}", role=Role.ASSISTANT, text=text), None)
        for i, text in enumerate(texts)
    ]
    sent = await publish(logged, bootstrap, settings)
    expected = expected_verdict_ids(sent)

    deadline = time.monotonic() + WAIT
    while not c.collected.verdicts and time.monotonic() < deadline:
        await c.poll()
    assert c.collected.verdicts, "the first worker produced nothing before the kill"
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    done_before_kill = len(set(expected) & set(c.collected.verdicts))

    # INFO: on a failure, the report shows the second worker's rebalance and table recovery.
    second = workers(settings, "INFO")
    if not await wait_for(c, sent, WAIT, alive=lambda: second.poll() is None):
        where = await furthest_stage(bootstrap, settings, [t for vid, t in expected.items() if vid not in c.collected.verdicts])
        done = sorted(t.turn_id for vid, t in expected.items() if vid in c.collected.verdicts)
        pytest.fail(f"turns went missing after the kill (verdicts before it: {done_before_kill}, in all: {done}): {where}")
    assert done_before_kill < len(expected), "the kill came too late to test anything"
    for vid, turn in expected.items():
        assert vid in c.collected.verdicts, f"{turn.turn_id} has no verdict"
        alerts = {a for a in c.collected.alerts.values() if (a.conversation_id, a.turn_id) == (turn.conversation_id, turn.turn_id)}
        assert len(alerts) <= 1


async def test_offset_reader_gives_back_what_the_consumer_skipped(broker) -> None:
    """The order guard's reader against the real broker: the group's committed offset, else the first one;
    and the messages of an offset range, in order."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    from stream.order_guard import GroupPosition, KafkaOffsetReader

    bootstrap = bootstrap_servers(broker.url)
    topic, group = f"t{uuid.uuid4().hex[:8]}.evidence", f"g{uuid.uuid4().hex[:8]}"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for n in range(5):
            await producer.send_and_wait(topic, key=b"conv", value=f"m{n}".encode(), partition=0)
    finally:
        await producer.stop()
    reader = KafkaOffsetReader(bootstrap, group)
    try:
        assert await reader.next_offset(topic, 0) == GroupPosition(0, committed=False)  # nothing committed: from the start
        committer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
        await committer.start()
        try:
            committer.assign([TopicPartition(topic, 0)])
            await committer.commit({TopicPartition(topic, 0): OffsetAndMetadata(3, "")})
        finally:
            await committer.stop()
        assert await reader.next_offset(topic, 0) == GroupPosition(3, committed=True)
        found = await reader.read(topic, 0, 1, 4)
        assert [(e.message.offset, e.value, e.message.key) for e in found] == [(1, b"m1", b"conv"), (2, b"m2", b"conv"), (3, b"m3", b"conv")]
        assert found[0].message.timestamp and abs(found[0].message.timestamp - time.time()) < 600
    finally:
        await reader.close()
