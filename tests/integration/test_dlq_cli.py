"""``halluwatch dlq`` against the real embedded broker: list, filter, show and send letters back unchanged."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from schemas import DeadLetter, encode, ids
from stream.app import bootstrap_servers, topic_name
from stream.broker import EmbeddedBroker
from stream.dead_letters import read_dead_letters
from stream.settings import Settings
from stream.topic_admin import ensure_topics
from tests.integration.test_stream import broker, read_topic, stream_settings  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[2]
NOT_JSON = b"{this is not json"
NOT_UTF8 = b"\xff\xfe caf\xe9"


def letter(settings: Settings, offset: int, original: bytes, error_type: str, reason: str, failed_at: float) -> DeadLetter:
    source = topic_name(settings, "turns")
    return DeadLetter(
        dead_letter_id=ids.dead_letter_id(source, 0, offset), source_topic=source, partition=0, offset=offset,
        key="conv-7", original_base64=base64.b64encode(original).decode(), reason=reason, error_type=error_type,
        stage="segment", failed_at=failed_at,
    )


def halluwatch(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HALLUWATCH_TOPIC_PREFIX": settings.topic_prefix, "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "stream.cli", "dlq", *args, "--broker", settings.broker_url or ""],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)


@pytest.fixture
async def letters(broker: EmbeddedBroker, tmp_path: Path) -> tuple[Settings, list[DeadLetter]]:  # noqa: F811
    from aiokafka import AIOKafkaProducer

    settings = stream_settings(broker, tmp_path)
    await ensure_topics(bootstrap_servers(broker.url), settings)
    made = [
        letter(settings, 3, NOT_JSON, "NotJSONError", "the message is not JSON", time.time() - 3 * 3600),
        letter(settings, 5, NOT_UTF8, "NotUTF8Error", "the message is not UTF-8 text", time.time() - 60),
    ]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap_servers(broker.url))
    await producer.start()
    try:
        for made_letter in made:
            await producer.send_and_wait(topic_name(settings, "dlq"), value=encode(made_letter))
        await producer.send_and_wait(topic_name(settings, "dlq"), value=b"not a dead letter")
    finally:
        await producer.stop()
    return settings, made


async def test_list_shows_every_letter_and_filters_by_reason_and_time(letters) -> None:
    settings, made = letters
    every = halluwatch(settings, "list")
    assert every.returncode == 0, every.stderr
    assert all(m.dead_letter_id in every.stdout for m in made) and "2 of 2 dead letters" in every.stdout
    assert "1 message(s)" in every.stdout and "not dead letters" in every.stdout
    assert f"{topic_name(settings, 'turns')}[0]@3" in every.stdout
    recent = halluwatch(settings, "list", "--since", "1h", "--json")
    assert [orjson.loads(line)["dead_letter_id"] for line in recent.stdout.splitlines() if line.startswith("{")] == [
        made[1].dead_letter_id]
    assert "1 of 2" in halluwatch(settings, "list", "--reason", "not json").stdout


async def test_show_prints_the_original_bytes(letters) -> None:
    settings, made = letters
    shown = halluwatch(settings, "show", made[0].dead_letter_id[:12], made[1].dead_letter_id)
    assert shown.returncode == 0, shown.stderr
    assert "{this is not json" in shown.stdout and "NotJSONError: the message is not JSON" in shown.stdout
    assert f"(not UTF-8; base64) {base64.b64encode(NOT_UTF8).decode()}" in shown.stdout
    unknown = halluwatch(settings, "show", "dl-nope")
    assert unknown.returncode == 2 and "no dead letter with id dl-nope" in unknown.stderr
    assert "Traceback" not in unknown.stderr


async def test_replay_sends_the_chosen_letters_back_unchanged(broker, letters) -> None:  # noqa: F811
    settings, made = letters
    dry = halluwatch(settings, "replay", "--reason", "utf-8", "--dry-run")
    assert "1 letters would be sent" in dry.stdout
    sent = halluwatch(settings, "replay", "--reason", "utf-8")
    assert sent.returncode == 0, sent.stderr and "sent 1 letters" in sent.stdout
    back = await read_topic(bootstrap_servers(broker.url), topic_name(settings, "turns"), 1)
    assert back == [(b"conv-7", NOT_UTF8)]  # same key, same bytes: the turn keeps its ids
    # Replaying takes nothing off the dead-letter topic: the letters stay for the record.
    assert len((await read_dead_letters(bootstrap_servers(broker.url), settings)).letters) == 2


def test_bad_since_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(broker_url="kafka://127.0.0.1:9", topic_prefix="x.")
    result = halluwatch(settings, "list", "--since", "last tuesday")
    assert result.returncode == 2 and "30m, 2h, 1d" in result.stderr and "Traceback" not in result.stderr
