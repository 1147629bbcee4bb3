"""What a replay prints and writes: a summary of what came back, and one report row per assistant turn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents.evaluation.metrics import dialogue_metrics, percentile
from schemas import Label, Turn, ids, to_dict
from stream.replay import Collected, expected_verdict_ids, verdict_model_seconds


@dataclass(frozen=True)
class Summary:
    turns: int
    assistant_turns: int
    claims: int
    verdicts: dict[str, int]
    alerts: int
    corrections: int
    dead_letters: int
    latency_median_s: float  # turn -> verdict
    latency_p95_s: float
    alert_latency_median_s: float  # turn -> alert (0 without alerts)
    alert_latency_p95_s: float
    model_seconds_median: float  # the model's own time per turn, segment to verify
    accuracy: float | None = None
    macro_f1: float | None = None


def summarize(sent: Sequence[Turn], collected: Collected, labels: dict[str, bool]) -> Summary:
    expected = expected_verdict_ids(sent)
    verdicts = [collected.verdicts[v] for v in expected if v in collected.verdicts]
    latencies = [
        collected.arrival[v.verdict_id] - v.evidence.claimset.turn_timestamp
        for v in verdicts
        if v.evidence.claimset.turn_timestamp > 0
    ]
    sent_ids = {(t.conversation_id, t.turn_id) for t in sent}
    alert_latencies = [a.latency_seconds for a in collected.alerts.values() if (a.conversation_id, a.turn_id) in sent_ids]
    counts = {label.value: sum(v.label is label for v in verdicts) for label in Label}
    accuracy = macro_f1 = None
    if labels:
        flagged = {v.evidence.claimset.conversation_id for v in verdicts if v.label is Label.FALSE}
        metrics = dialogue_metrics(labels, flagged)
        accuracy, macro_f1 = metrics.accuracy, metrics.macro_f1
    return Summary(
        turns=len(sent),
        assistant_turns=len(expected),
        claims=sum(len(v.evidence.claimset.claims) for v in verdicts),
        verdicts=counts,
        alerts=len(collected.alerts),
        corrections=len(collected.corrections),
        dead_letters=len(collected.dead_letters),
        latency_median_s=percentile(latencies, 0.5),
        latency_p95_s=percentile(latencies, 0.95),
        alert_latency_median_s=percentile(alert_latencies, 0.5),
        alert_latency_p95_s=percentile(alert_latencies, 0.95),
        model_seconds_median=percentile([verdict_model_seconds(v) for v in verdicts], 0.5),
        accuracy=accuracy,
        macro_f1=macro_f1,
    )


def format_summary(s: Summary) -> str:
    lines = [
        f"turns published: {s.turns} ({s.assistant_turns} assistant turns checked)",
        f"claims: {s.claims}",
        "verdicts: " + ", ".join(f"{k} {v}" for k, v in s.verdicts.items()),
        f"alerts: {s.alerts}, corrections: {s.corrections}, dead letters: {s.dead_letters}",
        f"latency turn -> verdict: median {s.latency_median_s:.1f}s, p95 {s.latency_p95_s:.1f}s"
        f" (the model's own time per turn: median {s.model_seconds_median:.1f}s)",
    ]
    if s.alerts:
        lines.append(f"latency turn -> alert: median {s.alert_latency_median_s:.1f}s, p95 {s.alert_latency_p95_s:.1f}s"
                     " (the correction is written first)")
    if s.accuracy is not None:
        lines.append(f"dialogue labels: accuracy {s.accuracy:.3f}, macro-F1 {s.macro_f1:.3f}")
    return "\n".join(lines)


def report_rows(sent: Sequence[Turn], collected: Collected, labels: dict[str, bool] | None = None) -> list[dict[str, Any]]:
    """One row per assistant turn; the full verdict record rides along so a report can be re-scored."""
    rows = []
    for vid, turn in expected_verdict_ids(sent).items():
        verdict = collected.verdicts.get(vid)
        cid = ids.correction_id(turn.conversation_id, turn.turn_id)
        aid = ids.alert_id(turn.conversation_id, turn.turn_id)
        restates = {c.index: c.restates for c in verdict.evidence.claimset.claims} if verdict else {}
        rows.append({
            "conversation_id": turn.conversation_id,
            "turn_id": turn.turn_id,
            "text": turn.text,
            "label": verdict.label.value if verdict else None,
            "claims": [
                {
                    "text": v.claim_text, "label": v.label.value, "confidence": round(v.confidence, 4),
                    "sufficiency": v.sufficiency.probability if v.sufficiency else None,
                    "selective_score": v.selective_score, "abstained": v.abstained,
                    "restates": restates.get(v.claim_index),  # the index of the claim it says again, or None
                }
                for v in (verdict.claim_verdicts if verdict else ())
            ],
            "corrected_text": collected.corrections[cid].corrected_text if cid in collected.corrections else None,
            "alert": aid in collected.alerts,
            "latency_s": round(collected.arrival[vid] - turn.timestamp, 3) if verdict else None,
            "conversation_hallucination": (labels or {}).get(turn.conversation_id),
            "verdict": to_dict(verdict) if verdict else None,
        })
    return rows
