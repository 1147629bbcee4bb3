"""The metrics benchmark's code-path measurement, on hand-built records."""

from dataclasses import replace

from schemas import ids
from stream.commands.bench_metrics import code_path_cost, stage_messages
from stream.replay import Collected
from stream.stages import make_alert
from tests.support.records import sample_correction, sample_turn_verdict


def collected() -> Collected:
    verdict = sample_turn_verdict()
    cs = verdict.evidence.claimset
    correction = replace(sample_correction(), correction_id=ids.correction_id(cs.conversation_id, cs.turn_id))
    alert = make_alert(verdict, correction, now=10.0)
    return Collected(verdicts={verdict.verdict_id: verdict}, corrections={correction.correction_id: correction},
                     alerts={alert.alert_id: alert})


def test_each_turn_replays_the_calls_of_all_four_stages() -> None:
    calls = stage_messages(collected())
    assert [stage for stage, _, _ in calls] == ["segment", "segment", "retrieve", "verify", "justify"]
    justify_outputs = [type(out).__name__ for _, out in calls[-1][2]]
    assert justify_outputs == ["Correction", "Alert"]


def test_code_path_cost_is_positive_and_small() -> None:
    cost = code_path_cost(collected(), repeat=50)
    assert 0 < cost["record_seconds_per_turn"] < 0.01
    assert 0 < cost["scrape_seconds"] < 0.1


def test_cpu_seconds_of_a_process_grows_with_work() -> None:
    import os
    import time

    from stream.commands.bench_metrics import cpu_seconds

    before = cpu_seconds(os.getpid())
    assert before is not None  # Linux: /proc is there
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    assert cpu_seconds(os.getpid()) - before >= 0.2
    assert cpu_seconds(2**22 + 12345) is None  # no such process


def test_paired_ratio_says_whether_the_run_can_tell_the_difference() -> None:
    from stream.commands.bench_metrics import describe_ratio, paired_ratio

    steady = paired_ratio([(0.995, 1.0), (0.994, 1.0), (0.996, 1.0), (0.995, 1.0)])
    assert abs(steady["mean"] - 0.995) < 1e-3 and steady["ci95_low"] > 0.99
    assert "no slowdown of 2% or more" in describe_ratio(steady)
    noisy = paired_ratio([(0.90, 1.0), (1.08, 1.0), (0.95, 1.0), (1.04, 1.0)])
    assert noisy["ci95_low"] < 0.98 < noisy["ci95_high"] and "cannot tell from a 2% slowdown" in describe_ratio(noisy)
    slow = paired_ratio([(0.90, 1.0), (0.91, 1.0), (0.92, 1.0)])
    assert "a slowdown of over 2%" in describe_ratio(slow)


def test_copies_give_each_conversation_its_own_ids() -> None:
    from schemas import Role, Turn
    from stream.commands.bench_metrics import copied
    from stream.replay import LoggedTurn

    turns = [LoggedTurn(Turn(conversation_id="c", turn_id=f"T{n}", role=Role.ASSISTANT, text="x"), None) for n in range(2)]
    made = copied(turns, 3)
    assert len(made) == 6 and len({(t.turn.conversation_id, t.turn.turn_id) for t in made}) == 6
    assert [t.turn.turn_id for t in made[:2]] == ["T0", "T1"]  # each copy keeps the order within its conversation
