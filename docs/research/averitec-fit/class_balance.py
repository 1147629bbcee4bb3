"""AVeriTeC fit variants: class balancing, and the atomic rows' share of the fit.

Each variant gets its L2 by 5-fold cross-validation on the AVeriTeC even rows (case level; criterion
accuracy + macro-F1), is refitted on all even rows, and is scored once on the odd rows. From the saved
judgements, no model: run from the repository root,

    python docs/research/averitec-fit/class_balance.py [qwen-1.5b]

With a judge's name, its letters stand where the model's label scores do (session 29; the saved judgements
carry them, see ../qwen-profile/add_judge_scores.py).
"""

import sys
from collections import Counter
from pathlib import Path

import numpy as np

from agents.evaluation.harness import FAILED, CaseResult, decided_labels, fitting_rows, load_judgements
from agents.evaluation.metrics import classification_metrics
from agents.scoring.calibration import LABELS, VerifyCalibration, with_swap_rate
from schemas import Label

AVERITEC = load_judgements(Path("docs/results/averitec-judgements.json"))
ATOMIC = load_judgements(Path("docs/results/atomic-judgements.json"))
L2_GRID = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
JUDGE = sys.argv[1] if len(sys.argv) > 1 else None


def weighted_fit(rows: list, labels: list[Label], weights: list[float], balanced: bool, l2: float) -> VerifyCalibration:
    """calibration.fit with a weight per row, and class balancing optional (the shipped fit balances)."""
    x = np.asarray(rows, float)
    y = np.array([LABELS.index(label) for label in labels])
    rw = np.asarray(weights, float)
    mean, scale = x.mean(0), x.std(0) + 1e-6
    xs = (x - mean) / scale
    onehot = np.eye(len(LABELS))[y]
    if balanced:
        counts = (onehot * rw[:, None]).sum(0)
        sample = (rw.sum() / (len(LABELS) * np.maximum(counts, 1e-9)))[y] * rw
    else:
        sample = rw * len(y) / rw.sum()
    w, b = np.zeros((len(LABELS), x.shape[1])), np.zeros(len(LABELS))
    for _ in range(3000):
        z = xs @ w.T + b
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = (p - onehot) * sample[:, None]
        w -= 0.3 * (g.T @ xs / len(y) + l2 * w)
        b -= 0.3 * g.mean(0)
    raw_w = w / scale
    calibration = VerifyCalibration(weights=tuple(map(tuple, raw_w.tolist())), bias=tuple((b - raw_w @ mean).tolist()),
                                    source="experiment", judge=JUDGE, lower=tuple(x.min(0).tolist()),
                                    upper=tuple(x.max(0).tolist()))
    return with_swap_rate(calibration, rows, labels)


def rows_of(dataset: str, cases: list[CaseResult]) -> list:
    return [row for case in cases for row in fitting_rows(dataset, case, JUDGE)]


ATOMIC_ROWS = rows_of("atomic", [c for c in ATOMIC.cases if c.position % 2 == 0 and c.predicted != FAILED])


def train(cases: list[CaseResult], atomic_share: float | None, balanced: bool, l2: float) -> VerifyCalibration:
    """atomic_share: the atomic rows' share of the total weight; None: every row weighs the same (as shipped)."""
    own = rows_of("averitec", cases)
    if atomic_share == 0:
        both, weights = own, [1.0] * len(own)
    else:
        both = own + ATOMIC_ROWS
        each = 1.0 if atomic_share is None else atomic_share / (1 - atomic_share) * len(own) / len(ATOMIC_ROWS)
        weights = [1.0] * len(own) + [each] * len(ATOMIC_ROWS)
    return weighted_fit([r for r, _ in both], [label for _, label in both], weights, balanced, l2)


def main() -> None:
    even = [i for i, c in enumerate(AVERITEC.cases) if c.position % 2 == 0]
    odd = [i for i, c in enumerate(AVERITEC.cases) if c.position % 2 == 1]
    gold = [c.gold for c in AVERITEC.cases]
    print("variant                       L2    | CV on even: acc   F1 | odd: acc   F1 | odd predicted (t/f/u)"
          " | odd true claims called false")
    for balanced in (True, False):
        for share in (None, 0.25, 0.1, 0):
            best = None
            for l2 in L2_GRID:
                truth, guess = [], []
                for k in range(5):
                    test = even[k::5]
                    decided = decided_labels(AVERITEC, train([AVERITEC.cases[i] for i in even if i not in test],
                                                             share, balanced, l2))
                    truth += [gold[i] for i in test]
                    guess += [decided[i] for i in test]
                m = classification_metrics(truth, guess, AVERITEC.labels)
                if best is None or m.accuracy + m.macro_f1 > best[0]:
                    best = (m.accuracy + m.macro_f1, l2, m)
            _, l2, cv = best
            decided = decided_labels(AVERITEC, train([AVERITEC.cases[i] for i in even], share, balanced, l2))
            held = classification_metrics([gold[i] for i in odd], [decided[i] for i in odd], AVERITEC.labels)
            counts = Counter(decided[i] for i in odd)
            true_rows = [i for i in odd if gold[i] == Label.TRUE.value]
            alarms = sum(decided[i] == Label.FALSE.value for i in true_rows)
            name = f"{'balanced' if balanced else 'natural prior'}, atomic {share if share is not None else 'as is'}"
            print(f"{name:<30}{l2:<6}|          {cv.accuracy:.3f} {cv.macro_f1:.3f} | {held.accuracy:.3f} {held.macro_f1:.3f}"
                  f" | {counts['true']:>3} {counts['false']:>3} {counts['unverifiable']:>3}          "
                  f" | {alarms} of {len(true_rows)}", flush=True)


if __name__ == "__main__":
    main()
