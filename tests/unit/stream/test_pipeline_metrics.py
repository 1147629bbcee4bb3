"""What the worker exports for each kind of message, read back from a fresh registry."""

from dataclasses import replace

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from agents.evidence.passages import GROUNDING
from schemas import Role, StageTiming, Turn
from stream.metrics import OTHER, PipelineMetrics
from stream.stages import make_alert
from tests.support.records import sample_correction, sample_turn_verdict

VERIFY = StageTiming(stage="verify", seconds=2.0, model_seconds=1.5, prompt_seconds=0.5, prompt_tokens=200, generated_tokens=40,
                     encoder_seconds=0.25)


@pytest.fixture
def metrics() -> PipelineMetrics:
    return PipelineMetrics(CollectorRegistry())


def value(m: PipelineMetrics, name: str, **labels: str) -> float:
    found = m.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def verdict_at(timestamp: float, bot: str = "bot"):
    v = sample_turn_verdict()
    claimset = replace(v.evidence.claimset, turn_timestamp=timestamp, bot=bot)
    return replace(v, evidence=replace(v.evidence, claimset=claimset), timings=(VERIFY,))


def test_claim_verdicts_are_counted_by_what_they_were_judged_against(metrics) -> None:
    """A RAG bot's grounded turns, retrieved evidence and closed-book verdicts are told apart on the dashboard."""
    v = verdict_at(100.0)
    grounded = replace(v, evidence=replace(v.evidence, passages=tuple(
        replace(p, retriever=GROUNDING) for p in v.evidence.passages)))
    closed_book = replace(v, evidence=replace(v.evidence, passages=()))
    for verdict in (grounded, closed_book):
        metrics.message_done("verify", verdict.evidence, [("verdicts", verdict)], 2.0, now=107.0)
    assert value(metrics, "halluwatch_claim_verdicts_total", label="false", evidence="grounded") == 1
    assert value(metrics, "halluwatch_claim_verdicts_total", label="false", evidence="closed_book") == 1
    assert value(metrics, "halluwatch_claim_verdicts_total", label="false", evidence="retrieved") == 0


def test_turns_are_counted_by_role_and_stage_time_observed(metrics) -> None:
    turn = Turn(conversation_id="c", turn_id="1", role=Role.USER, text="Hi")
    metrics.message_done("segment", turn, [], 0.25, now=0)
    metrics.message_done("segment", replace(turn, role=Role.ASSISTANT), [], 0.5, now=0)
    assert value(metrics, "halluwatch_turns_total", role="user") == 1
    assert value(metrics, "halluwatch_turns_total", role="assistant") == 1
    assert value(metrics, "halluwatch_stage_duration_seconds_count", stage="segment") == 2
    assert value(metrics, "halluwatch_stage_duration_seconds_sum", stage="segment") == pytest.approx(0.75)


def test_verdict_counts_labels_model_time_tokens_and_end_to_end_latency(metrics) -> None:
    verdict = verdict_at(100.0)
    metrics.message_done("verify", verdict.evidence, [("verdicts", verdict)], 2.0, now=107.0)
    assert value(metrics, "halluwatch_turn_verdicts_total", label="false", bot="bot") == 1
    assert value(metrics, "halluwatch_claim_verdicts_total", label="false", evidence="retrieved") == 1
    assert value(metrics, "halluwatch_claim_verdicts_total", label="true", evidence="retrieved") == 1
    assert value(metrics, "halluwatch_model_seconds_total", stage="verify", phase="prompt") == pytest.approx(0.5)
    assert value(metrics, "halluwatch_model_seconds_total", stage="verify", phase="generate") == pytest.approx(1.0)
    assert value(metrics, "halluwatch_model_tokens_total", stage="verify", phase="prompt") == 200
    assert value(metrics, "halluwatch_encoder_seconds_total", stage="verify") == pytest.approx(0.25)
    assert value(metrics, "halluwatch_model_tokens_total", stage="verify", phase="generate") == 40
    assert value(metrics, "halluwatch_end_to_end_latency_seconds_sum", output="verdict") == pytest.approx(7.0)
    assert value(metrics, "halluwatch_end_to_end_latency_seconds_bucket", output="verdict", le="5.0") == 0
    assert value(metrics, "halluwatch_end_to_end_latency_seconds_bucket", output="verdict", le="10.0") == 1


def test_a_turn_without_timestamp_observes_no_latency(metrics) -> None:
    verdict = verdict_at(0.0)
    metrics.message_done("verify", verdict.evidence, [("verdicts", verdict)], 1.0, now=50.0)
    assert value(metrics, "halluwatch_end_to_end_latency_seconds_count", output="verdict") == 0


def test_correction_and_alert(metrics) -> None:
    verdict = verdict_at(100.0)
    correction = sample_correction()
    alert = make_alert(verdict, correction, now=112.0)
    metrics.message_done("justify", verdict, [("corrections", correction), ("alerts", alert)], 3.0, now=112.0)
    assert value(metrics, "halluwatch_corrections_total", label="false", acceptable="true") == 1
    assert value(metrics, "halluwatch_correction_actionability_score_sum") == 7
    assert value(metrics, "halluwatch_correction_actionability_score_bucket", le="6.0") == 0
    assert value(metrics, "halluwatch_alerts_total", severity="high", bot="bot") == 1
    assert value(metrics, "halluwatch_end_to_end_latency_seconds_sum", output="alert") == pytest.approx(12.0)
    assert value(metrics, "halluwatch_end_to_end_latency_seconds_sum", output="correction") == pytest.approx(12.0)


def test_bot_label_is_bounded(metrics) -> None:
    small = PipelineMetrics(CollectorRegistry(), max_bots=2)
    for bot in ("a", "b", "c", "d", "a"):
        v = verdict_at(1.0, bot=bot)
        small.message_done("verify", v.evidence, [("verdicts", v)], 1.0, now=2.0)
    assert value(small, "halluwatch_turn_verdicts_total", label="false", bot="a") == 2
    assert value(small, "halluwatch_turn_verdicts_total", label="false", bot=OTHER) == 2
    assert value(small, "halluwatch_turn_verdicts_total", label="false", bot="c") == 0


def test_no_conversation_id_in_any_label(metrics) -> None:
    verdict = verdict_at(100.0)
    correction = sample_correction()
    metrics.message_done("justify", verdict, [("c", correction), ("a", make_alert(verdict, correction, 110.0))], 1.0, 110.0)
    exported = generate_latest(metrics.registry).decode()
    assert "c1" not in exported and "t1" not in exported  # the sample's conversation and turn ids


def test_dead_letters_cache_and_lag(metrics) -> None:
    metrics.dead_letter("segment", "SchemaViolation")
    metrics.dead_letter("segment", "SchemaViolation")
    metrics.retrieval_cache(hit=True)
    metrics.retrieval_cache(hit=False)
    metrics.retrieval_cache(hit=True)
    assert value(metrics, "halluwatch_dead_letters_total", stage="segment", reason="SchemaViolation") == 2
    assert value(metrics, "halluwatch_retrieval_cache_requests_total", result="hit") == 2
    metrics.set_consumer_lag({("turns", 0): 5, ("turns", 1): 0})
    assert value(metrics, "halluwatch_consumer_lag_messages", topic="turns", partition="0") == 5
    # After a rebalance partition 0 belongs to another worker: its series must go, not freeze at 5.
    metrics.set_consumer_lag({("turns", 1): 3})
    assert metrics.registry.get_sample_value("halluwatch_consumer_lag_messages", {"topic": "turns", "partition": "0"}) is None
    assert value(metrics, "halluwatch_consumer_lag_messages", topic="turns", partition="1") == 3


def test_build_info(metrics) -> None:
    metrics.set_build_info("0.1.0", "model.gguf", 99)
    assert value(metrics, "halluwatch_build_info", version="0.1.0", model="model.gguf", gpu_layers="99",
                 python=__import__("platform").python_version()) == 1
