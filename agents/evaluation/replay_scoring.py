"""Scoring `replay --wait --out` reports again without a broker or the model.

A report row carries the full verdict record, so a labelled replay (DiaHalu
format) can be re-decided under another calibration or threshold, or turned
into rows that fit the selective-verdict model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.errors import InputError
from agents.evaluation.metrics import deciding_verdict, dialogue_metrics
from agents.inputs import read_jsonl
from agents.scoring.selective import SelectiveRow, selective_features
from schemas import Label, RecordError, TurnVerdict, from_dict


@dataclass(frozen=True)
class ReportRow:
    line: int
    conversation_id: str
    hallucination: bool | None  # the conversation's label, when the replayed file had one
    verdict: TurnVerdict | None  # None: the turn got no verdict (a dead letter, or a timeout)


def read_report(path: Path) -> Iterable[ReportRow]:
    """The rows of a `replay --wait --out` report, verdicts decoded; a clear error for anything else."""
    for n, row in read_jsonl(path):
        if "verdict" not in row or "conversation_id" not in row:
            raise InputError(f"{path}:{n}: not a replay report row: write one with `halluwatch replay FILE --wait --out`")
        label = row.get("conversation_hallucination")
        try:
            verdict = from_dict(TurnVerdict, row["verdict"]) if row["verdict"] is not None else None
        except RecordError as exc:
            raise InputError(f"{path}:{n}: the verdict record does not match this version of halluwatch ({exc})") from None
        yield ReportRow(n, row["conversation_id"], bool(label) if label is not None else None, verdict)


def rescore_report(path: Path, decide_again: Callable[[TurnVerdict], TurnVerdict]) -> tuple[Counter[str], dict[str, Any] | None]:
    """Re-decide every verdict of a replay report; verdict counts, and dialogue metrics when labelled."""
    counts: Counter[str] = Counter()
    flagged: dict[str, bool] = {}
    labels: dict[str, bool] = {}
    for row in read_report(path):
        if row.hallucination is not None:
            labels[row.conversation_id] = row.hallucination
        if row.verdict is None:
            continue
        verdict = decide_again(row.verdict)
        counts[verdict.label.value] += 1
        flagged[row.conversation_id] = flagged.get(row.conversation_id, False) or verdict.label is Label.FALSE
    if not labels:
        return counts, None
    metrics = dialogue_metrics(labels, {c for c, f in flagged.items() if f})
    return counts, {"dialogues": len(labels), "accuracy": metrics.accuracy, "macro_f1": metrics.macro_f1}


def report_selective_rows(path: Path) -> list[SelectiveRow]:
    """Selective-verdict rows from a labelled replay report: one per conversation, odd ones held out."""
    verdicts: dict[str, list[TurnVerdict]] = {}
    labels: dict[str, bool] = {}
    for row in read_report(path):
        if row.hallucination is None:
            raise InputError(f"{path}:{row.line}: the row has no conversation label; replay a labelled file (DiaHalu format)")
        labels[row.conversation_id] = row.hallucination
        if row.verdict is not None:
            verdicts.setdefault(row.conversation_id, []).append(row.verdict)
    rows = []
    for index, (conversation, gold) in enumerate(labels.items()):
        turns = verdicts.get(conversation, [])
        deciding = deciding_verdict([v for t in turns for v in t.claim_verdicts])
        if deciding is None:
            continue
        turn = next(t for t in turns if deciding in t.claim_verdicts)
        flagged = any(t.label is Label.FALSE for t in turns)
        features = selective_features(deciding.sufficiency, deciding.confidence, deciding.fit, turn.evidence.passages,
                                      turn.evidence.claimset.claim_date, deciding.claim_text)
        rows.append(SelectiveRow(features, flagged == gold, flagged, gold, index % 2 == 1))
    return rows
