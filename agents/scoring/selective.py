"""Selective verdicts: abstain when a verdict is unlikely to be right.

After the Sufficient Context paper: a small logistic regression predicts
whether a verdict is correct from the sufficiency autorater's probability, the
verdict's own confidence and a few cheap facts about the evidence and claim.
A verdict scoring below the threshold abstains: it becomes "unverifiable
(abstained)" and raises no alert. The threshold trades coverage against
accuracy; a calibration file carries the fitted weights and the held-out
coverage/accuracy curve, so a target coverage or a target alert precision can
be turned into a threshold when the file is loaded.

Features, and why:
* ``sufficiency`` - the autorater's probability that the evidence can settle
  the claim: verdicts on insufficient evidence are guesses;
* ``confidence`` - the calibrated probability of the chosen label;
* ``evidence_fit`` - how well the evidence predicts the claim's words (mean
  token log-probability): a verdict about a claim the evidence never
  mentions is weakly grounded whatever its label;
* ``log_passages`` - more passages, more chances that one addresses the claim;
* ``recent`` - whether a passage is dated within a year of the claim: stale
  evidence is what CAAFC warns about;
* ``log_claim_words`` - long claims pack several facts and are judged worse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import orjson

from agents.errors import InputError
from schemas import ClaimSufficiency, EvidenceFit, Passage, RecordError, from_dict

FEATURES: tuple[str, ...] = ("sufficiency", "confidence", "evidence_fit", "log_passages", "recent", "log_claim_words")
NO_SUFFICIENCY = ("confidence", "evidence_fit", "log_passages", "recent", "log_claim_words")
DEFAULT_PATH = Path(__file__).parent / "selective_calibration.json"
DEFAULT_COVERAGE = 1.0  # without a target: keep every verdict (see README: abstaining bought nothing measurable with the 270M model)


def _recent(passages: Sequence[Passage], claim_date: str | None) -> float:
    if claim_date is None:
        return 0.0
    anchor = date.fromisoformat(claim_date)
    for p in passages:
        if p.published_at and abs((date.fromisoformat(p.published_at) - anchor).days) <= 365:
            return 1.0
    return 0.0


def selective_features(
    sufficiency: ClaimSufficiency | None,
    confidence: float,
    fit: EvidenceFit | None,
    passages: Sequence[Passage],
    claim_date: str | None,
    claim: str,
) -> dict[str, float]:
    return {
        "sufficiency": sufficiency.probability if sufficiency else 0.0,
        "confidence": confidence,
        "evidence_fit": fit.mean_logprob if fit else 0.0,
        "log_passages": math.log1p(len(passages)),
        "recent": _recent(passages, claim_date),
        "log_claim_words": math.log1p(len(claim.split())),
    }


@dataclass(frozen=True)
class CurvePoint:
    threshold: float
    coverage: float
    accuracy: float  # selective accuracy on the covered rows
    alert_precision: float  # of the covered "false" verdicts, the share that are really false


@dataclass(frozen=True)
class SelectiveModel:
    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    curve: tuple[CurvePoint, ...] = ()  # on the held-out split
    source: str = ""

    def score(self, values: dict[str, float]) -> float:
        z = self.bias + sum(w * values[name] for w, name in zip(self.weights, self.features))
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def with_target(self, coverage: float | None = None, precision: float | None = None) -> SelectiveModel:
        """The same model with its threshold moved to meet a target on the held-out curve."""
        if coverage is None and precision is None:
            return self
        if not self.curve:
            raise InputError("this selective calibration has no held-out curve: refit it with `halluwatch calibrate`")
        if coverage is not None and coverage >= 1.0:
            # Keep everything: also verdicts scoring below any held-out row (the lowest held-out
            # score as threshold would still abstain on those).
            return SelectiveModel(self.features, self.weights, self.bias, 0.0, self.curve, self.source)
        if coverage is not None:
            point = min(self.curve, key=lambda p: (abs(p.coverage - coverage), -p.coverage))
        else:
            meeting = [p for p in self.curve if p.alert_precision >= precision]
            if not meeting:
                raise InputError(
                    f"no threshold reaches an alert precision of {precision} on the held-out data"
                    f" (best {max(p.alert_precision for p in self.curve):.2f}): lower the target"
                )
            point = max(meeting, key=lambda p: p.coverage)
        return SelectiveModel(self.features, self.weights, self.bias, point.threshold, self.curve, self.source)

    @classmethod
    def load(cls, path: Path = DEFAULT_PATH) -> SelectiveModel:
        return SelectiveFit.load(path).model


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 0.05, steps: int = 4000, rate: float = 0.3,
                 sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Binary logistic regression by gradient descent on standardised features; weights for raw features.
    ``sample_weight`` (mean 1) lets a rare class weigh as much as a common one."""
    if len(set(y.tolist())) < 2:
        raise InputError("the fit needs rows of both classes (right and wrong verdicts, or sufficient and"
                         " insufficient evidence); add more rows")
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    xs = (x - mean) / scale
    weight = np.ones(len(y)) if sample_weight is None else sample_weight / sample_weight.mean()
    w = np.zeros(x.shape[1])
    b = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(xs @ w + b)))
        w -= rate * (xs.T @ (weight * (p - y)) / len(y) + l2 * w)
        b -= rate * float((weight * (p - y)).mean())
    raw = w / scale
    return raw, float(b - raw @ mean)


def curve(scores: Sequence[float], correct: Sequence[bool], flagged: Sequence[bool], gold_false: Sequence[bool]) -> list[CurvePoint]:
    """Coverage, selective accuracy and alert precision at every distinct threshold, highest first."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    points: list[CurvePoint] = []
    right = alerts = true_alerts = 0
    for k, i in enumerate(order, start=1):
        right += correct[i]
        alerts += flagged[i]
        true_alerts += flagged[i] and gold_false[i]
        if k == len(order) or scores[order[k]] < scores[i]:
            points.append(CurvePoint(
                threshold=round(scores[i], 6), coverage=k / len(order), accuracy=right / k,
                alert_precision=true_alerts / alerts if alerts else 1.0,
            ))
    return points


def area_under_curve(points: Sequence[CurvePoint]) -> float:
    """Area under selective accuracy against coverage (step-wise, from coverage 0 to 1)."""
    area, last = 0.0, 0.0
    for p in points:
        area += (p.coverage - last) * p.accuracy
        last = p.coverage
    return area


@dataclass(frozen=True)
class SelectiveRow:
    """One judged row: the selective features of its deciding verdict and how it came out."""

    features: dict[str, float]
    correct: bool
    flagged: bool  # the row would raise an alert (false / hallucination)
    gold_false: bool
    held_out: bool


@dataclass(frozen=True)
class SelectiveFit:
    model: SelectiveModel
    without_sufficiency: SelectiveModel  # the same regression without the sufficiency feature
    auc: float  # held-out area under the coverage/accuracy curve
    auc_without_sufficiency: float
    fitted_rows: int
    held_out_rows: int

    @classmethod
    def load(cls, path: Path = DEFAULT_PATH) -> SelectiveFit:
        try:
            return from_dict(cls, orjson.loads(Path(path).read_bytes()))
        except (OSError, orjson.JSONDecodeError, RecordError) as exc:
            raise InputError(
                f"cannot read selective calibration {path} ({exc}): set HALLUWATCH_SELECTIVE_CALIBRATION to a file"
                " written by `halluwatch calibrate`"
            ) from None

    def save(self, path: Path) -> None:
        Path(path).write_bytes(orjson.dumps(self, option=orjson.OPT_INDENT_2) + b"\n")


def _fit_one(names: tuple[str, ...], fit_rows: Sequence[SelectiveRow], held: Sequence[SelectiveRow], source: str) -> tuple[SelectiveModel, float]:
    x = np.array([[r.features[n] for n in names] for r in fit_rows], dtype=float)
    y = np.array([float(r.correct) for r in fit_rows])
    weights, bias = fit_logistic(x, y)
    model = SelectiveModel(features=names, weights=tuple(float(w) for w in weights), bias=bias, threshold=0.0, source=source)
    points = evaluate_curve(model, held)
    return SelectiveModel(names, model.weights, bias, 0.0, tuple(points), source), area_under_curve(points)


def evaluate_curve(model: SelectiveModel, rows: Sequence[SelectiveRow]) -> list[CurvePoint]:
    return curve([model.score(r.features) for r in rows], [r.correct for r in rows], [r.flagged for r in rows],
                 [r.gold_false for r in rows])


def fit_selective(
    rows: Sequence[SelectiveRow], source: str, coverage: float | None = None, precision: float | None = None
) -> SelectiveFit:
    """Fit on the rows not held out; curves, areas and the threshold come from the held-out rows."""
    fit_rows = [r for r in rows if not r.held_out]
    held = [r for r in rows if r.held_out]
    if len(fit_rows) < 10 or len(held) < 10:
        raise InputError(f"too few judged rows to fit and test ({len(fit_rows)} + {len(held)}): give at least 20 labelled rows")
    model, auc = _fit_one(FEATURES, fit_rows, held, source)
    plain, plain_auc = _fit_one(NO_SUFFICIENCY, fit_rows, held, source + " (without sufficiency)")
    if coverage is None and precision is None:
        coverage = DEFAULT_COVERAGE
    return SelectiveFit(
        model=model.with_target(coverage, precision),
        without_sufficiency=plain.with_target(coverage, precision),
        auc=auc,
        auc_without_sufficiency=plain_auc,
        fitted_rows=len(fit_rows),
        held_out_rows=len(held),
    )


def plot_curves(fit: SelectiveFit, path: Path) -> None:
    """Held-out selective accuracy against coverage, with and without the sufficiency signal, as PNG."""
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4), dpi=120)
    for model, auc, name in ((fit.model, fit.auc, "with sufficiency"),
                             (fit.without_sufficiency, fit.auc_without_sufficiency, "without sufficiency")):
        axes.plot([p.coverage for p in model.curve], [p.accuracy for p in model.curve], label=f"{name} (area {auc:.3f})")
    chosen = min(fit.model.curve, key=lambda p: abs(p.threshold - fit.model.threshold))
    axes.scatter([chosen.coverage], [chosen.accuracy], color="black", zorder=3, label=f"threshold {fit.model.threshold:.2f}")
    axes.set_xlabel("coverage (share of verdicts kept)")
    axes.set_ylabel("selective accuracy")
    axes.set_title(f"held-out coverage / accuracy ({fit.held_out_rows} rows)")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower left")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


@dataclass(frozen=True)
class SelectiveSummary:
    """Selective verdicts on a set of rows at one threshold, plus the areas under both curves."""

    rows: int
    threshold: float
    coverage: float
    selective_accuracy: float
    alert_precision: float
    alert_recall: float
    auc: float
    auc_without_sufficiency: float


def summarize_selective(rows: Sequence[SelectiveRow], fit: SelectiveFit) -> SelectiveSummary:
    if not rows:
        return SelectiveSummary(0, fit.model.threshold, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    kept = [r for r in rows if fit.model.score(r.features) >= fit.model.threshold]
    alerts = [r for r in kept if r.flagged]
    gold_false = sum(r.gold_false for r in rows)
    return SelectiveSummary(
        rows=len(rows),
        threshold=fit.model.threshold,
        coverage=len(kept) / len(rows),
        selective_accuracy=sum(r.correct for r in kept) / len(kept) if kept else 0.0,
        alert_precision=sum(r.gold_false for r in alerts) / len(alerts) if alerts else 0.0,
        alert_recall=sum(r.gold_false for r in alerts) / gold_false if gold_false else 0.0,
        auc=area_under_curve(evaluate_curve(fit.model, rows)),
        auc_without_sufficiency=area_under_curve(evaluate_curve(fit.without_sufficiency, rows)),
    )
