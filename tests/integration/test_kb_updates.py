"""Knowledge-base update end to end: a worker process with the knowledge base and the web retriever on,
the real embedded broker, the real model, real headless Chromium against a local AI-answer page.

The knowledge base holds an outdated Everest height (2005); the answer page cites the 2020 official
height. The turn's evidence has both; the kb-update stage must compare them, supersede the old
document and publish the change on the kb-updates topic.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.evidence.kb.store import KnowledgeBase
from agents.testing import example_site
from agents.testing.example_site import ExamplePages
from schemas import KbUpdate, Preference, Role, Turn, decode
from stream.app import bootstrap_servers, topic_name
from stream.broker import EmbeddedBroker
from stream.process import stop
from stream.replay import LoggedTurn, publish
from stream.settings import Settings
from stream.topic_admin import ensure_topics

ROOT = Path(__file__).resolve().parents[2]
OLD_URL = "https://www.example-atlas.com/everest"
WAIT = 480.0


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


async def read_until(bootstrap: str, topic: str, deadline: float, alive) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                group_id=f"reader-{uuid.uuid4().hex[:6]}")
    await consumer.start()
    try:
        while time.monotonic() < deadline and alive():
            batches = await consumer.getmany(timeout_ms=1000)
            values = [m.value for messages in batches.values() for m in messages]
            if values:
                return values
    finally:
        await consumer.stop()
    return []


async def test_fresher_web_evidence_supersedes_the_knowledge_base(broker, tmp_path: Path) -> None:
    kb_path = tmp_path / "kb.sqlite3"
    kb = KnowledgeBase(kb_path)
    kb.add([(1, {"text": "Mount Everest is 8,848 metres high according to the 1955 survey of India.", "url": OLD_URL,
                 "title": "World atlas: Everest", "published_at": "2005-03-01"})], ingested_at="2010-01-01")
    kb.close()
    settings = Settings(broker_url=broker.url, topic_prefix=f"k{uuid.uuid4().hex[:8]}.", partitions=1, data_dir=tmp_path)
    bootstrap = bootstrap_servers(broker.url)
    await ensure_topics(bootstrap, settings)
    with ExamplePages() as site:
        env = {
            **os.environ,
            "HALLUWATCH_TOPIC_PREFIX": settings.topic_prefix, "HALLUWATCH_PARTITIONS": "1",
            "HALLUWATCH_DATA_DIR": str(tmp_path), "HALLUWATCH_KB": str(kb_path), "HALLUWATCH_N_THREADS": "2",
            "HALLUWATCH_WEB_RETRIEVER": "on", "HALLUWATCH_WEB_URL_TEMPLATE": site.url_template(),
            "HALLUWATCH_WEB_ANSWER_SELECTOR": example_site.ANSWER_SELECTOR,
            "HALLUWATCH_WEB_LINK_SELECTOR": example_site.LINK_SELECTOR,
            "HALLUWATCH_WEB_DATE_SELECTOR": example_site.DATE_SELECTOR,
            "HALLUWATCH_WEB_BROWSERS": "1", "HALLUWATCH_WEB_TIMEOUT": "30",
        }
        worker = subprocess.Popen([sys.executable, "-m", "stream.cli", "worker", "--broker", broker.url], env=env, cwd=ROOT)
        try:
            turn = Turn(conversation_id="conv-everest", turn_id="T1", role=Role.ASSISTANT, bot="test-bot",
                        text="Mount Everest is 8,848 metres high.")
            await publish([LoggedTurn(turn, None)], bootstrap, settings)
            values = await read_until(bootstrap, topic_name(settings, "kb-updates"), time.monotonic() + WAIT,
                                      alive=lambda: worker.poll() is None)
        finally:
            stop(worker, timeout=30)
        assert site.queries, "the worker never queried the answer page"
        assert "Mount Everest" in site.queries[0]
    assert values, "no kb-update arrived"
    update = decode(KbUpdate, values[0])
    assert (update.conversation_id, update.turn_id, update.preferred) == ("conv-everest", "T1", Preference.NEW)
    assert (update.old.url, update.old.published_at) == (OLD_URL, "2005-03-01")
    assert (update.new.url, update.new.published_at, update.new_retriever) == (
        "https://www.dos.gov.np/everest-height", "2020-12-08", "web")
    kb = KnowledgeBase(kb_path)
    try:
        old = kb.get(update.old.doc_id)
        assert old is not None and old.superseded_by == update.new.doc_id  # kept, marked superseded
        chain = kb.history(OLD_URL)
        assert [[d.url for d in c] for c in chain] == [[OLD_URL, "https://www.dos.gov.np/everest-height"]]
        assert [h.document.url for h in kb.search("Mount Everest metres high")][:1] == ["https://www.dos.gov.np/everest-height"]
    finally:
        kb.close()
