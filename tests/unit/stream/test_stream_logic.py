import base64
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from agents.errors import InputError
from schemas import GroundingDocument, Label, SchemaViolation
from stream.app import bootstrap_servers
from stream.replay import read_replay
from stream.stages import dead_letter, make_alert, severity_of
from tests.support.records import claim_verdict, sample_correction, sample_turn_verdict


@dataclass
class FakeMessage:
    topic: str = "halluwatch.turns"
    partition: int = 1
    offset: int = 42
    key: bytes = b"conv-1"


@dataclass
class FakeEvent:
    value: bytes
    message: FakeMessage


def test_dead_letter_keeps_the_original_and_where_it_came_from() -> None:
    letter = dead_letter(FakeEvent(b"\x00garbage", FakeMessage()), "segment", SchemaViolation("Turn invalid at role"))
    assert base64.b64decode(letter.original_base64) == b"\x00garbage"
    assert (letter.source_topic, letter.partition, letter.offset, letter.key) == ("halluwatch.turns", 1, 42, "conv-1")
    assert letter.reason == "SchemaViolation: Turn invalid at role" and letter.stage == "segment"
    assert letter.dead_letter_id == dead_letter(FakeEvent(b"other", FakeMessage()), "x", ValueError()).dead_letter_id


def test_huge_original_is_cut_so_the_dead_letter_can_be_sent() -> None:
    letter = dead_letter(FakeEvent(b"x" * 2_000_000, FakeMessage()), "segment", ValueError("too big"))
    assert len(base64.b64decode(letter.original_base64)) == 400_000
    assert "cut to" in letter.reason


def test_alert_lists_false_claims_with_sources_and_latency() -> None:
    verdict = sample_turn_verdict()
    verdict = replace(verdict, evidence=replace(verdict.evidence, claimset=replace(verdict.evidence.claimset, turn_timestamp=100.0)))
    alert = make_alert(verdict, sample_correction(), now=103.5)
    assert alert.latency_seconds == pytest.approx(3.5)
    assert [c.claim_text for c in alert.false_claims] == ["The tower is in Berlin."]
    assert alert.sources[0].published_at == "2023-05-01"
    assert alert.alert_id == make_alert(verdict, sample_correction(), now=999).alert_id


def test_severity_follows_the_confidence_of_the_false_claims() -> None:
    verdict = sample_turn_verdict()
    low = replace(verdict, claim_verdicts=(replace(claim_verdict(0, "x", Label.FALSE), confidence=0.4),))
    assert severity_of(verdict).value == "high" and severity_of(low).value == "low"


def test_replay_reads_all_three_layouts(tmp_path: Path) -> None:
    f = tmp_path / "log.jsonl"
    f.write_text(
        '{"conversation_id": "a", "turn_id": "1", "role": "user", "text": "Hi", "timestamp": 5}\n'
        '{"conversation_id": "b", "turns": [{"role": "user", "text": "Q"}, {"role": "assistant", "text": "A"}]}\n'
        '{"id": "d1", "label": "hallucination", "turns": [{"speaker": "B1", "role": "assistant", "text": "X"}]}\n'
    )
    replay = read_replay(f)
    assert [(t.turn.conversation_id, t.turn.turn_id) for t in replay.turns] == [("a", "1"), ("b", "0"), ("b", "1"), ("d1", "B1")]
    assert replay.turns[0].logged_at == 5.0 and replay.labels == {"d1": True}


def test_replay_keeps_the_documents_a_turn_was_answered_from(tmp_path: Path) -> None:
    f = tmp_path / "log.jsonl"
    f.write_text(
        '{"conversation_id": "rag", "turns": [{"role": "user", "text": "Where is Hartland Swamp?"}, {"role": "assistant",'
        ' "text": "In Erie County.", "grounding": [{"text": "Hartland Swamp is in Niagara County.",'
        ' "url": "https://example.org/s", "published_at": "2019-04-01T10:00:00Z"}]}]}\n'
    )
    user, answer = read_replay(f).turns
    assert user.turn.grounding == ()
    assert answer.turn.grounding == (GroundingDocument(text="Hartland Swamp is in Niagara County.",
                                                       url="https://example.org/s", published_at="2019-04-01"),)


@pytest.mark.parametrize("grounding", ['"a page"', '[{"url": "https://example.org"}]', '[{"text": " "}]'])
def test_replay_names_a_bad_grounding_and_its_fix(tmp_path: Path, grounding: str) -> None:
    f = tmp_path / "log.jsonl"
    f.write_text(f'{{"conversation_id": "a", "role": "assistant", "text": "x", "grounding": {grounding}}}\n')
    with pytest.raises(InputError, match=r"log.jsonl:1: grounding must be a list of documents, each with text"):
        read_replay(f)


def test_replay_names_the_bad_line(tmp_path: Path) -> None:
    f = tmp_path / "log.jsonl"
    f.write_text('{"conversation_id": "a", "role": "robot", "text": "x"}\n')
    with pytest.raises(InputError, match="log.jsonl:1"):
        read_replay(f)


def test_bootstrap_servers() -> None:
    assert bootstrap_servers("kafka://a:9092;kafka://b:9093") == "a:9092,b:9093"


def test_taken_port_is_reported_with_the_fix() -> None:
    import socket

    from stream.broker import EmbeddedBroker
    from stream.errors import BrokerError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(BrokerError, match="already taken"):
            EmbeddedBroker(port=s.getsockname()[1]).start()


def test_dead_letters_name_their_turn_from_any_stage() -> None:
    from schemas import DeadLetter, encode
    from stream.replay import Collected, dead_lettered_turns

    def named(original: bytes) -> set[tuple[str, str]]:
        letter = DeadLetter(dead_letter_id="d", source_topic="t", partition=0, offset=0, key=None,
                            original_base64=base64.b64encode(original).decode(), reason="r", error_type="E",
                            stage="s", failed_at=1.0)
        return dead_lettered_turns(Collected(dead_letters={"d": letter}))

    verdict = sample_turn_verdict()
    assert named(b'{"conversation_id": "c1", "turn_id": "t0", "role": "assistant", "text": "x"}') == {("c1", "t0")}
    for record in (verdict.evidence.claimset, verdict.evidence, verdict):
        assert named(encode(record)) == {("c1", "t1")}, type(record).__name__
    assert named(b"{not json") == set()


async def test_a_run_waits_for_the_alert_that_follows_the_last_correction() -> None:
    # The worker publishes a false turn's correction, then its alert: a run that stopped at the correction
    # reported one alert fewer than the worker raised (the demo's last alert went missing that way).
    from schemas import Role, Turn, ids
    from stream.replay import Collected, wait_for

    verdict = replace(sample_turn_verdict(), verdict_id=ids.verdict_id("c1", "t1"))
    correction = replace(sample_correction(), correction_id=ids.correction_id("c1", "t1"))
    alert = replace(make_alert(verdict, correction, now=1.0), alert_id=ids.alert_id("c1", "t1"))

    class OneRecordAPoll:
        def __init__(self) -> None:
            self.collected = Collected()
            self.arriving = [("verdicts", verdict.verdict_id, verdict), ("corrections", correction.correction_id, correction),
                             ("alerts", alert.alert_id, alert)]

        async def poll(self, on_record=None) -> None:
            if self.arriving:
                kind, key, record = self.arriving.pop(0)
                getattr(self.collected, kind)[key] = record

    collector = OneRecordAPoll()
    sent = [Turn(conversation_id="c1", turn_id="t1", role=Role.ASSISTANT, text="The tower is in Berlin.")]
    assert await wait_for(collector, sent, timeout=5.0)
    assert list(collector.collected.alerts) == [alert.alert_id]
