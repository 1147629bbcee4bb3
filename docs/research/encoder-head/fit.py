"""Does the cross-encoder's pooled state tell AVeriTeC's labels apart better than its margin? (session 22)

From saved judgements plus the pooled states written by extract.py; no model runs. Every variant is chosen
by 5-fold cross-validation on the even rows (row i in fold i mod 5); the odd rows are scored once.

    python docs/research/encoder-head/fit.py /tmp/pooled-averitec.npz /tmp/pooled-atomic.npz
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent.parent / "averitec-fit"))
from class_balance import weighted_fit  # noqa: E402

from agents.evaluation.harness import FAILED, claim_label, load_judgements, whole_features
from agents.evaluation.metrics import classification_metrics
from agents.scoring.calibration import LABELS

LABEL_NAMES = [label.value for label in LABELS]


def load_rows(dataset: str, npz: dict[str, np.ndarray]):
    run = load_judgements(Path(f"docs/results/{dataset}-judgements.json"))
    base, pooled, labels, positions = [], [], [], []
    for case in run.cases:
        if case.predicted == FAILED:
            continue
        (row,) = whole_features(case)
        base.append(row)
        pooled.append(npz[f"{dataset}-judgements|{case.position}|whole|0|0"])
        labels.append(LABELS.index(claim_label(dataset, case.gold)))
        positions.append(case.position)
    return np.array(base), np.array(pooled), np.array(labels), np.array(positions)


def fit(x: np.ndarray, y: np.ndarray, l2: float, balanced: bool = True):
    """The averitec-fit study's weighted fit (the shipped fit's gradient descent, class balance optional) on
    any feature columns; returns a function from feature rows to label probabilities."""
    calibration = weighted_fit(x.tolist(), [LABELS[i] for i in y], [1.0] * len(y), balanced, l2)

    def predict(rows: np.ndarray) -> np.ndarray:
        return np.array([[calibration.combine(row).of(label) for label in LABELS] for row in rows])

    return predict


def scores(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    m = classification_metrics([LABEL_NAMES[i] for i in y], [LABEL_NAMES[i] for i in p.argmax(1)], LABEL_NAMES)
    return m.accuracy, m.macro_f1


def vectors(path: Path) -> dict[str, np.ndarray]:
    data = np.load(path)
    return dict(zip(data["keys"].tolist(), data["vectors"]))


GRID = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


def cv(make, n: int, y: np.ndarray, folds: int = 5):
    """Out-of-fold probabilities of make(train_index) -> predict(test_index)."""
    out = np.zeros((n, 3))
    for k in range(folds):
        train = np.array([i for i in range(n) if i % folds != k])
        test = np.array([i for i in range(n) if i % folds == k])
        out[test] = make(train)(test)
    return out


def main(averitec_npz: Path, atomic_npz: Path) -> None:
    av = load_rows("averitec", vectors(averitec_npz))
    at = load_rows("atomic", vectors(atomic_npz))
    even = av[3] % 2 == 0
    odd = ~even
    at_even = at[3] % 2 == 0
    base_e, pooled_e, y_e = av[0][even], av[1][even], av[2][even]
    base_o, pooled_o, y_o = av[0][odd], av[1][odd], av[2][odd]
    abase, apooled, ay = at[0][at_even], at[1][at_even], at[2][at_even]
    n = len(y_e)

    def variant(name, feats_e, feats_o, afeats, balanced=True):
        best = None
        for l2 in GRID:
            def make(train, l2=l2):
                x = np.vstack([feats_e[train], afeats]) if afeats is not None else feats_e[train]
                yy = np.concatenate([y_e[train], ay]) if afeats is not None else y_e[train]
                predict = fit(x, yy, l2, balanced)
                return lambda test: predict(feats_e[test])
            acc, f1 = scores(y_e, cv(make, n, y_e))
            if best is None or acc + f1 > best[1] + best[2]:
                best = (l2, acc, f1)
        l2 = best[0]
        x = np.vstack([feats_e, afeats]) if afeats is not None else feats_e
        yy = np.concatenate([y_e, ay]) if afeats is not None else y_e
        p = fit(x, yy, l2, balanced)(feats_o)
        acc, f1 = scores(y_o, p)
        pred = p.argmax(1)
        true_as_false = int(((y_o == 0) & (pred == 1)).sum())
        print(f"{name:48s} L2 {l2:<5} CV even {best[1]:.3f}/{best[2]:.3f}  odd {acc:.3f}/{f1:.3f}"
              f"  predicted t/f/u {np.bincount(pred, minlength=3).tolist()}  true->false {true_as_false}/{(y_o == 0).sum()}",
              flush=True)

    variant("shipped features (+atomic)", base_e, base_o, abase)
    variant("shipped + mean margins (+atomic)", np.hstack([base_e, pooled_e[:, 2:4]]), np.hstack([base_o, pooled_o[:, 2:4]]),
            np.hstack([abase, apooled[:, 2:4]]))
    for k in (4, 8, 16, 32):
        # Principal directions of the even rows' pooled states (AVeriTeC and atomic), no labels used.
        both = np.vstack([pooled_e[:, 4:], apooled[:, 4:]])
        mu = both.mean(0)
        _, _, vt = np.linalg.svd(both - mu, full_matrices=False)
        proj = lambda v: (v[:, 4:] - mu) @ vt[:k].T
        variant(f"shipped + pooled PCA {k} (+atomic)", np.hstack([base_e, proj(pooled_e)]), np.hstack([base_o, proj(pooled_o)]),
                np.hstack([abase, proj(apooled)]))
        variant(f"shipped + pooled PCA {k} (no atomic)", np.hstack([base_e, proj(pooled_e)]), np.hstack([base_o, proj(pooled_o)]), None)
    variant("pooled only, 768 (+atomic)", pooled_e[:, 4:], pooled_o[:, 4:], apooled[:, 4:])
    variant("shipped + pooled 768 (+atomic)", np.hstack([base_e, pooled_e[:, 4:]]), np.hstack([base_o, pooled_o[:, 4:]]),
            np.hstack([abase, apooled[:, 4:]]))
    variant("shipped + pooled 768 (no atomic)", np.hstack([base_e, pooled_e[:, 4:]]), np.hstack([base_o, pooled_o[:, 4:]]), None)
    variant("natural prior: shipped + pooled 768 (no atomic)", np.hstack([base_e, pooled_e[:, 4:]]),
            np.hstack([base_o, pooled_o[:, 4:]]), None, balanced=False)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
