"""The verifier's calibration: a multinomial logistic model over model scores and cheap signals.

``combine`` turns one claim's feature vector into label probabilities.
``fit`` learns the weights from labelled rows (the eval harness collects the
features); the file ``verify_calibration.json`` next to this module was fitted
by ``halluwatch train-verifier`` on the rows of ../shared/data with an even
position in their file (the odd rows are the held-out split the eval harness
reports separately).
The model's label probabilities enter as probabilities, not log-probabilities:
the small model's scores vary little on the benchmark, and unbounded log
features let the fit extrapolate wildly on confident outliers.
Without a calibration, the identity weights keep the model's own ranking.

Turns checked against the documents they came with (``Turn.grounding``, and
HaluEval's knowledge passages) are a different task from claims checked against
retrieved evidence: did the answer stay with its source, against is the claim
true. The signals weigh differently in the two (on HaluEval a reply's words
missing from its source are the tell; on AVeriTeC the evidence is question and
answer pairs that rarely repeat the claim's words), and one fit over both pulled
each below its own. So a calibration may carry a second fit, ``grounded``, used
for grounded evidence; ``for_evidence`` picks. A calibration that reads the
optional judge's letters carries a third, ``closed_book``, without them: the
judge does not read a claim that has no evidence at all.

One signal also acts on its own: a passage sentence that restates the claim
with another name or number (``value_swap``). In a linear fit it gets little
weight, because on the fitting rows where it fires the evidence fit already
gives the claim away (those claims are near-copies of their evidence); a
chatbot paraphrases, and there the restatement may be the only sign. So the
fit also measures how often the fitting rows on which it fires are false, and
``after_value_swap`` raises the false score of a restated claim to that rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from agents.errors import InputError
from schemas import Label, LabelScores

FEATURE_NAMES: tuple[str, ...] = (
    "model_p_true",
    "model_p_false",
    "model_p_unverifiable",
    "best_passage_overlap",
    "evidence_overlap",
    "number_conflict",
    "number_match",
    "name_conflict",
    "negation_mismatch",
    "value_swap",
    "no_evidence",
    "log_passage_count",
    "answer_word_support",
    "answer_names_missing",
    "answer_numbers_missing",
    "evidence_mean_logprob",
    "evidence_min_logprob",
    "evidence_contradiction",
    "nli_evidence_then_claim",
    "nli_claim_then_evidence",
)
# A calibration fitted on a judge's letters reads these too, after FEATURE_NAMES (agents.model.judge).
JUDGE_FEATURE_NAMES: tuple[str, ...] = FEATURE_NAMES + (
    "judge_each_p_true",
    "judge_each_p_false",
    "judge_each_p_unverifiable",
)
LABELS: tuple[Label, ...] = tuple(Label)
DEFAULT_PATH = Path(__file__).parent / "verify_calibration.json"
# The calibration shipped for each judge (agents.model.judge.JUDGES): fitted on its letters.
JUDGE_PATHS = {"qwen-1.5b": Path(__file__).parent / "verify_calibration_qwen-1.5b.json"}


@dataclass(frozen=True)
class VerifyCalibration:
    weights: tuple[tuple[float, ...], ...]  # one row per label, one column per feature
    bias: tuple[float, ...]
    source: str = "identity"
    # The range each feature had in the fitting data. Features are clipped to it before combining:
    # a linear model must not extrapolate (a small model's scores vary little on the benchmark,
    # so a confident outlier would otherwise get an absurd weight).
    lower: tuple[float, ...] | None = None
    upper: tuple[float, ...] | None = None
    # Share of the fitting rows with a value swap that were false, and how many rows fired; None: not used.
    swap_false_rate: float | None = None
    swap_rows: int = 0
    # The fit for turns checked against their own documents; None: this one serves every turn.
    grounded: VerifyCalibration | None = None
    # The judge (agents.model.judge) whose letters this fit reads in place of the model's label scores;
    # None: the model's own. A calibration fitted on a judge's letters decides only verdicts the judge read.
    judge: str | None = None
    # With a judge: the fit for claims checked with no evidence at all, which the judge does not read (there its
    # letters told DiaHalu's hallucinated claims from the rest at chance, AUC 0.545, for two readings' time).
    closed_book: VerifyCalibration | None = None

    def for_evidence(self, grounded: bool, closed_book: bool = False) -> VerifyCalibration:
        """The fit that decides a claim: the grounded one for a turn checked against its own documents, the
        closed-book one (where there is one) for a claim without evidence."""
        if grounded and self.grounded is not None:
            return self.grounded
        return self.closed_book if closed_book and self.closed_book is not None else self

    @property
    def feature_names(self) -> tuple[str, ...]:
        return feature_names(self.judge)

    @classmethod
    def identity(cls, judge: str | None = None) -> VerifyCalibration:
        """Weights that keep the first three features' ranking: the model's label scores, or the judge's letters."""
        n = len(feature_names(judge))
        weights = tuple(tuple(1.0 if j == i else 0.0 for j in range(n)) for i in range(len(LABELS)))
        return cls(weights=weights, bias=(0.0,) * len(LABELS), judge=judge)

    def combine(self, features: Sequence[float]) -> LabelScores:
        x = np.asarray(features, dtype=float)
        if self.lower is not None and self.upper is not None:
            x = np.clip(x, self.lower, self.upper)
        z = np.asarray(self.weights) @ x + np.asarray(self.bias)
        p = np.exp(z - z.max())
        p /= p.sum()
        return LabelScores(**{label.value: float(p[i]) for i, label in enumerate(LABELS)})

    def after_value_swap(self, scores: LabelScores) -> LabelScores:
        """The scores of a claim that a passage restates with another value: false at least at the measured
        rate, the rest shared by true and unverifiable as before."""
        rate = self.swap_false_rate
        if rate is None or scores.false >= rate:
            return scores
        rest = scores.true + scores.unverifiable or 1.0
        return LabelScores(true=(1 - rate) * scores.true / rest, false=rate,
                           unverifiable=(1 - rate) * scores.unverifiable / rest)

    @classmethod
    def load(cls, path: Path = DEFAULT_PATH) -> VerifyCalibration:
        try:
            return cls.from_dict(orjson.loads(Path(path).read_bytes()), str(path))
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputError(f"cannot read calibration {path} ({exc}): set HALLUWATCH_CALIBRATION to a valid file") from None

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> VerifyCalibration:
        names = feature_names(data.get("judge"))
        if tuple(data["features"]) != names or any(len(row) != len(names) for row in data["weights"]):
            raise InputError(f"calibration {where} was fitted on other features: refit it with"
                             " `halluwatch train-verifier --out OUT.json`")
        bounds = {k: tuple(float(v) for v in data[k]) if data.get(k) is not None else None for k in ("lower", "upper")}
        return cls(
            weights=tuple(tuple(float(w) for w in row) for row in data["weights"]),
            bias=tuple(float(b) for b in data["bias"]),
            source=str(data.get("source", where)),
            swap_false_rate=float(data["swap_false_rate"]) if data.get("swap_false_rate") is not None else None,
            swap_rows=int(data.get("swap_rows", 0)),
            grounded=cls.from_dict(data["grounded"], f"{where} (grounded)") if data.get("grounded") else None,
            judge=str(data["judge"]) if data.get("judge") else None,
            closed_book=cls.from_dict(data["closed_book"], f"{where} (closed-book)") if data.get("closed_book") else None,
            **bounds,
        )

    def to_dict(self) -> dict[str, Any]:
        return {"features": self.feature_names, "labels": [l.value for l in LABELS], "weights": self.weights,
                "bias": self.bias, "source": self.source, "lower": self.lower, "upper": self.upper,
                "swap_false_rate": self.swap_false_rate, "swap_rows": self.swap_rows,
                "grounded": self.grounded.to_dict() if self.grounded is not None else None, "judge": self.judge,
                "closed_book": self.closed_book.to_dict() if self.closed_book is not None else None}

    def save(self, path: Path) -> None:
        Path(path).write_bytes(orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2) + b"\n")


def feature_names(judge: str | None) -> tuple[str, ...]:
    """The features a calibration reads, in order: with a judge, its letters beside each passage come last."""
    return JUDGE_FEATURE_NAMES if judge else FEATURE_NAMES


def fit(
    rows: Sequence[Sequence[float]],
    labels: Sequence[Label],
    l2: float = 0.05,
    steps: int = 3000,
    learning_rate: float = 0.3,
    source: str = "fitted",
) -> VerifyCalibration:
    """Multinomial logistic regression by full-batch gradient descent, class-balanced, with L2.

    Balanced, because a benchmark's share of false claims (61 % of AVeriTeC's) is not the share in a
    chatbot's traffic: fits that learned it flagged most true claims (docs/research/averitec-fit/README.md)."""
    x = np.asarray(rows, dtype=float)
    y = np.array([LABELS.index(label) for label in labels])
    if len(set(y.tolist())) < 2:
        raise InputError("calibration needs rows of at least two different labels")
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    xs = (x - mean) / scale
    onehot = np.eye(len(LABELS))[y]
    counts = onehot.sum(axis=0)
    sample_weight = (len(y) / (len(LABELS) * np.maximum(counts, 1)))[y]
    w = np.zeros((len(LABELS), x.shape[1]))
    b = np.zeros(len(LABELS))
    for _ in range(steps):
        z = xs @ w.T + b
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        grad = (p - onehot) * sample_weight[:, None]
        w -= learning_rate * (grad.T @ xs / len(y) + l2 * w)
        b -= learning_rate * grad.mean(axis=0)
    # Fold the standardisation into the weights so combine() takes raw features.
    raw_w = w / scale
    raw_b = b - raw_w @ mean
    return VerifyCalibration(
        weights=tuple(tuple(float(v) for v in row) for row in raw_w),
        bias=tuple(float(v) for v in raw_b),
        source=source,
        lower=tuple(float(v) for v in x.min(axis=0)),
        upper=tuple(float(v) for v in x.max(axis=0)),
    )


L2_GRID = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def cross_validated_fit(
    rows: Sequence[Sequence[float]], labels: Sequence[Label], source: str = "fitted", folds: int = 5,
    grid: Sequence[float] = L2_GRID,
) -> VerifyCalibration:
    """:func:`fit` with its L2 strength chosen by k-fold cross-validation on the same rows.

    The folds are fixed (row i is in fold i mod k), so the choice is reproducible; held-out
    rows are never seen. The choice minimises the held-out folds' log-loss: on a few hundred rows,
    accuracy moves in steps of one row and was flat across the grid (251 to 254 right of 288 for the
    grounded fit), so one changed row flipped the choice between strengths whose held-out figures
    differ by 0.02; the log-loss reads every probability and ranks the grid the same way on both
    sides of such a change. The source records the choice, its log-loss and its accuracy.
    """
    y = list(labels)
    loss: dict[float, float] = {}
    accuracy: dict[float, float] = {}
    for l2 in grid:
        total, right = 0.0, 0
        for k in range(folds):
            train = [i for i in range(len(rows)) if i % folds != k]
            calibration = fit([rows[i] for i in train], [y[i] for i in train], l2=l2)
            for i in range(k, len(rows), folds):
                scores = calibration.combine(rows[i])
                total -= math.log(max(scores.of(y[i]), 1e-9))
                right += scores.best() is y[i]
        loss[l2], accuracy[l2] = total / len(rows), right / len(rows)
    best = min(grid, key=lambda l2: (round(loss[l2], 9), grid.index(l2)))
    return fit(rows, y, l2=best, source=f"{source}; L2 {best} chosen by {folds}-fold cross-validation"
               f" (log-loss {loss[best]:.3f}, accuracy {accuracy[best]:.3f})")


MIN_SWAP_ROWS = 10  # fewer fitting rows with a value swap measure nothing: leave the rule off


def with_swap_rate(calibration: VerifyCalibration, rows: Sequence[Sequence[float]], labels: Sequence[Label]) -> VerifyCalibration:
    """The calibration with the value-swap rule measured on the same rows (off below MIN_SWAP_ROWS rows).

    The rule only ever raises a false score, so it is used only where the fired rows were mostly false.
    """
    column = FEATURE_NAMES.index("value_swap")
    fired = [label for row, label in zip(rows, labels) if row[column] > 0]
    rate = sum(label is Label.FALSE for label in fired) / len(fired) if fired else 0.0
    if len(fired) < MIN_SWAP_ROWS or rate <= 0.5:
        return replace(calibration, swap_false_rate=None, swap_rows=len(fired))
    return replace(calibration, swap_false_rate=round(rate, 4), swap_rows=len(fired),
                   source=f"{calibration.source}; value-swap rule: {rate:.2f} of {len(fired)} fitting rows with a swap were false")
