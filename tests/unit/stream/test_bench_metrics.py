"""The metrics benchmark's code-path measurement, on hand-built records."""

from dataclasses import replace

from schemas import derive_id
from stream.commands.bench_metrics import code_path_cost, stage_messages
from stream.replay import Collected
from stream.stages import make_alert

from tests.unit.records import sample_correction, sample_turn_verdict


def collected() -> Collected:
    verdict = sample_turn_verdict()
    cs = verdict.evidence.claimset
    correction = replace(sample_correction(), correction_id=derive_id("correction", cs.conversation_id, cs.turn_id))
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
