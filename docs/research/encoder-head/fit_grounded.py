"""The grounded fit with the cross-encoder's pooled state: does it flag fewer reworded right answers? (session 22)

The grounded fit learns from HaluEval QA's even rows and the bundled reworded set's even rows. The second
hand-written set (docs/research/grounded-paraphrase/more-cases.jsonl) is in no fit: it is the honest check.
A turn is flagged when any of its claims is not called true (as the harness reads a grounded turn). No
value-swap rule and no sufficiency here, so the figures sit near, not at, the shipped ones. Variants are
chosen by 5-fold cross-validation on the even rows (turn accuracy); then every held-out set is scored once.

    python docs/research/encoder-head/fit_grounded.py /tmp/pooled-grounded.npz
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from fit import GRID, fit, vectors

from agents.evaluation.harness import FAILED, claim_features, claim_label, load_judgements
from agents.scoring.calibration import LABELS
from schemas import Label

FILES = {"halueval": Path("docs/results/halueval-judgements.json"),
         "paraphrase": Path("docs/results/paraphrase-judgements.json"),
         "more": Path("docs/research/grounded-paraphrase/more-cases-judgements.json")}
TRUE = LABELS.index(Label.TRUE)


def cases_of(name: str, pooled: dict[str, np.ndarray]):
    """Per case: (position, gold is hallucination, [(base row, pooled vector)] of its claims, fit rows with labels)."""
    path = FILES[name]
    run = load_judgements(path)
    out = []
    for case in run.cases:
        if case.predicted == FAILED:
            continue
        label = claim_label(run.dataset, case.gold)
        claims, fitting = [], []
        for t_index, turn in enumerate(case.judged):
            for c_index, (claim, judgement) in enumerate(zip(turn.evidence.claimset.claims, turn.judgements)):
                row = np.array(claim_features(turn.evidence, claim, judgement)[2])
                vector = pooled[f"{path.stem}|{case.position}|judged|{t_index}|{c_index}"]
                claims.append((row, vector))
                if not (label is Label.FALSE and len(turn.judgements) != 1):
                    fitting.append((row, vector, LABELS.index(label)))
        out.append((case.position, label is Label.FALSE, claims, fitting))
    return out


def turn_accuracy(cases, predict) -> tuple[float, int, int, int, int]:
    """accuracy, right answers flagged, right answers, lies passed, lies"""
    flagged_right = passed_lies = rights = lies = 0
    for _, lie, claims, _ in cases:
        flagged = bool(claims) and any(p.argmax() != TRUE for p in predict(claims))
        rights += not lie
        lies += lie
        flagged_right += flagged and not lie
        passed_lies += lie and not flagged
    return 1 - (flagged_right + passed_lies) / len(cases), flagged_right, rights, passed_lies, lies


def main(npz: Path) -> None:
    pooled = vectors(npz)
    sets = {name: cases_of(name, pooled) for name in FILES}
    even = [c for name in ("halueval", "paraphrase") for c in sets[name] if c[0] % 2 == 0]
    held = {"halueval odd": [c for c in sets["halueval"] if c[0] % 2], "paraphrase odd": [c for c in sets["paraphrase"] if c[0] % 2],
            "more-cases (no fit)": sets["more"]}
    pooled_even = np.array([v for c in even for _, v, _ in c[3]])
    mu = pooled_even[:, 4:].mean(0)
    _, _, vt = np.linalg.svd(pooled_even[:, 4:] - mu, full_matrices=False)

    def featurize(kind: str, row: np.ndarray, vector: np.ndarray) -> np.ndarray:
        if kind == "shipped":
            return row
        if kind == "+mean margins":
            return np.concatenate([row, vector[2:4]])
        if kind.startswith("+PCA"):
            return np.concatenate([row, (vector[4:] - mu) @ vt[: int(kind[4:])].T])
        return np.concatenate([row, vector[4:]])

    def trainer(kind: str, l2: float, cases):
        x = np.array([featurize(kind, r, v) for c in cases for r, v, _ in c[3]])
        y = np.array([label for c in cases for _, _, label in c[3]])
        predict = fit(x, y, l2)
        return lambda claims: predict(np.array([featurize(kind, r, v) for r, v in claims]))

    for kind in ("shipped", "+mean margins", "+PCA4", "+PCA8", "+PCA16", "+PCA32", "+pooled768"):
        best = None
        for l2 in GRID:
            right = 0
            for k in range(5):
                model = trainer(kind, l2, [c for i, c in enumerate(even) if i % 5 != k])
                test = [c for i, c in enumerate(even) if i % 5 == k]
                right += turn_accuracy(test, model)[0] * len(test)
            if best is None or right > best[1]:
                best = (l2, right / len(even))
        model = trainer(kind, best[0], even)
        figures = []
        for name, cases in held.items():
            acc, fr, r, pl, lies = turn_accuracy(cases, model)
            figures.append(f"{name} {acc:.3f} (right flagged {fr}/{r}, lies passed {pl}/{lies})")
        print(f"{kind:14s} L2 {best[0]:<5} CV even {best[1]:.3f} | " + " | ".join(figures), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
