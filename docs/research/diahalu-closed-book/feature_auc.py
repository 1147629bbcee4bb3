"""Does anything the shipped verifier computes tell a DiaHalu hallucinated turn's claims from the rest?

Research for issue #13 (DiaHalu rows in `train-verifier`). DiaHalu is judged closed-book: no evidence, so
the verifier's features of a claim are the Gemma 3 270M's label scores under the closed-book prompt and its
log-probabilities of the claim's own tokens (the evidence signals are all zero). If no feature ranks the
claims of the turns DiaHalu marks as hallucinated above the others (AUC 0.5 = chance), adding DiaHalu rows to
the training set cannot make the verifier catch them.

    python docs/research/diahalu-closed-book/feature_auc.py [docs/results/diahalu-judgements.json]

Reads the judgements `halluwatch eval diahalu ... --save-judgements` wrote (no model run) and the public
DiaHalu file for the hallucinated-turn labels. Prints one AUC per feature that varies, over all claims.
"""

import json
import sys
from pathlib import Path

import numpy as np

from agents.evaluation.harness import claim_features, load_judgements

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data" / "diahalu" / "dev-public.jsonl"
# The order of agents.scoring.signals.features: 3 label scores, the claim-vs-evidence signals, 3 fit values.
LEADING = ("model p(true)", "model p(false)", "model p(unverifiable)")
TRAILING = ("claim mean log-prob", "claim min log-prob", "contradiction")


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    p, n = scores[positive], scores[~positive]
    return float((p[:, None] > n[None, :]).mean() + 0.5 * (p[:, None] == n[None, :]).mean())


def main(judgements: Path) -> None:
    rows = {row["id"]: row for row in map(json.loads, DATA.open())}
    features, hallucinated = [], []
    for case in load_judgements(judgements).cases:
        marked = rows[case.case_id]["hallucinated_turns"]
        for turn in case.judged:
            for claim, judgement in zip(turn.evidence.claimset.claims, turn.judgements):
                features.append(claim_features(turn.evidence, claim, judgement)[2])
                hallucinated.append(turn.evidence.claimset.turn_id in marked)
    x, y = np.array(features), np.array(hallucinated)
    names = [*LEADING, *(f"signal {i}" for i in range(x.shape[1] - 6)), *TRAILING]
    print(f"{len(y)} claims, {int(y.sum())} of them in turns DiaHalu marks as hallucinated")
    for i, name in enumerate(names):
        if x[:, i].std() > 0:
            print(f"  {name:<24} AUC {auc(x[:, i], y):.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "results" / "diahalu-judgements.json")
