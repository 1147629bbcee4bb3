"""The demo plays its conversations as live traffic and reports latency next to the model's own time."""

import subprocess
import sys
from dataclasses import replace

from schemas import Role, StageTiming, Turn, ids
from stream.commands.demo import CONVERSATIONS, live_schedule
from stream.commands.replay_report import format_summary, summarize
from stream.replay import Collected, LoggedTurn, read_replay
from stream.stages import make_alert
from tests.support.records import sample_correction, sample_turn_verdict


def test_live_schedule_interleaves_exchanges_and_keeps_each_conversation_in_order() -> None:
    turns = read_replay(CONVERSATIONS).turns
    played = live_schedule(turns, 6.0)
    assert sorted((t.turn.conversation_id, t.turn.turn_id) for t in played) == sorted(
        (t.turn.conversation_id, t.turn.turn_id) for t in turns)
    assert [t.logged_at for t in played] == [6.0 * n for n in range(len(turns))]
    for conversation in {t.turn.conversation_id for t in turns}:
        assert [t.turn for t in played if t.turn.conversation_id == conversation] == [
            t.turn for t in turns if t.turn.conversation_id == conversation]
    # Question and reply stay together; the conversations take turns, so replies come evenly spaced.
    roles = [t.turn.role for t in played]
    assert roles == [Role.USER, Role.ASSISTANT] * (len(turns) // 2)
    first_four = [t.turn.conversation_id for t in played[:8:2]]
    assert len(set(first_four)) == 4


def test_a_reply_without_a_question_is_an_exchange_of_its_own() -> None:
    def logged(cid: str, tid: str, role: Role) -> LoggedTurn:
        return LoggedTurn(Turn(conversation_id=cid, turn_id=tid, role=role, text="x"), None)

    turns = [logged("a", "0", Role.ASSISTANT), logged("a", "1", Role.ASSISTANT), logged("b", "0", Role.USER),
             logged("b", "1", Role.ASSISTANT)]
    assert [(t.turn.conversation_id, t.turn.turn_id) for t in live_schedule(turns, 1.0)] == [
        ("a", "0"), ("b", "0"), ("b", "1"), ("a", "1")]


def test_pace_zero_sends_everything_at_once_in_file_order() -> None:
    turns = read_replay(CONVERSATIONS).turns
    played = live_schedule(turns, 0)
    assert [t.turn for t in played] == [t.turn for t in turns] and {t.logged_at for t in played} == {None}


def test_summary_reports_alert_latency_and_the_models_own_time() -> None:
    verdict = sample_turn_verdict()
    claimset = replace(verdict.evidence.claimset, turn_timestamp=100.0,
                       timings=(StageTiming(stage="segment", seconds=1.5, model_seconds=1.2),))
    verdict = replace(verdict, evidence=replace(verdict.evidence, claimset=claimset,
                                                timings=(StageTiming(stage="retrieve", seconds=0.5, model_seconds=0.3),)),
                      timings=(StageTiming(stage="verify", seconds=2.5, model_seconds=2.0),))
    turn = Turn(conversation_id=claimset.conversation_id, turn_id=claimset.turn_id, role=Role.ASSISTANT, text="x",
                timestamp=100.0)
    collected = Collected()
    collected.verdicts[ids.verdict_id(turn.conversation_id, turn.turn_id)] = replace(
        verdict, verdict_id=ids.verdict_id(turn.conversation_id, turn.turn_id))
    collected.arrival[ids.verdict_id(turn.conversation_id, turn.turn_id)] = 104.0
    alert = make_alert(verdict, sample_correction(), now=106.0)
    collected.alerts[alert.alert_id] = alert

    summary = summarize([turn], collected, {})
    assert summary.latency_median_s == 4.0 and summary.alert_latency_median_s == 6.0
    assert abs(summary.model_seconds_median - 3.5) < 1e-9
    text = format_summary(summary)
    assert "median 4.0s" in text and "model's own time per turn: median 3.5s" in text
    assert "turn -> alert: median 6.0s" in text


def test_a_negative_pace_is_refused_with_the_fix() -> None:
    done = subprocess.run([sys.executable, "-m", "stream.cli", "demo", "--pace", "-1"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "--pace -1" in done.stderr and "0 or more" in done.stderr and "Traceback" not in done.stderr
