"""Scores of a labelled run: accuracy, macro-F1, per-class figures, the confusion matrix, percentiles.

Shared by the eval harness, replay reports and the benchmarks, so every
command computes a figure the same way.
"""

from __future__ import annotations

import statistics
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

from schemas import ClaimVerdict, DialogueLabel, Label


@dataclass(frozen=True)
class ClassScores:
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class Metrics:
    n: int
    accuracy: float
    macro_f1: float
    per_class: dict[str, ClassScores]
    labels: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]  # rows: gold, columns: predicted


def classification_metrics(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> Metrics:
    if len(gold) != len(predicted):
        raise ValueError("gold and predicted differ in length")
    index = {label: i for i, label in enumerate(labels)}
    confusion = [[0] * len(labels) for _ in labels]
    correct = 0
    for g, p in zip(gold, predicted):
        correct += g == p
        if p in index:  # a failed row ("error") predicts nothing: it only lowers recall and accuracy
            confusion[index[g]][index[p]] += 1
    per_class: dict[str, ClassScores] = {}
    for label, i in index.items():
        tp = confusion[i][i]
        predicted_i = sum(row[i] for row in confusion)
        support = sum(confusion[i])
        precision = tp / predicted_i if predicted_i else 0.0
        recall = tp / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[label] = ClassScores(precision, recall, f1, support)
    n = len(gold)
    return Metrics(
        n=n,
        accuracy=correct / n if n else 0.0,
        macro_f1=statistics.fmean(c.f1 for c in per_class.values()) if per_class else 0.0,
        per_class=per_class,
        labels=tuple(labels),
        confusion=tuple(tuple(row) for row in confusion),
    )


def deciding_verdict(verdicts: Sequence[ClaimVerdict]) -> ClaimVerdict | None:
    """The claim verdict that decides a row under Algorithm 1: the surest false one, else the surest
    unverifiable one, else the least sure true one (the weakest link of an all-true answer)."""
    for label in (Label.FALSE, Label.UNVERIFIABLE):
        matching = [v for v in verdicts if v.label is label]
        if matching:
            return max(matching, key=lambda v: v.confidence)
    return min(verdicts, key=lambda v: v.confidence, default=None)


def dialogue_metrics(hallucinated: Mapping[str, bool], flagged: Container[str]) -> Metrics:
    """Dialogue-level scores: each conversation's gold label against whether any of its turns was flagged false."""
    gold = [DialogueLabel.of(hallucinated[c]) for c in hallucinated]
    predicted = [DialogueLabel.of(c in flagged) for c in hallucinated]
    return classification_metrics(gold, predicted, tuple(DialogueLabel))


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[k]


def roc_area(positive: Sequence[float], negative: Sequence[float]) -> float:
    """The chance that a positive row scores above a negative one (ties count half): the area under the ROC
    curve. 0.5 is chance."""
    if not positive or not negative:
        raise ValueError("the area under the ROC curve needs rows of both classes")
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))
