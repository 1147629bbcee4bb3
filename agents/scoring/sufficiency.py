"""The sufficiency rater: how likely a claim's evidence is to settle it, from signals the verify stage has.

A logistic regression over the claim's word overlap with its best passage and with all of them, the
evidence cross-encoder's two margins and the number of passages, fitted by ``halluwatch train-verifier`` on
labelled rows: evidence that settled a claim (gold true or false, and every grounded answer's own
document) against evidence that did not (gold unverifiable: AVeriTeC's not-enough-evidence and conflicting
claims, the atomic claims paired with another row's passage). It replaced a call to the Gemma 3 270M model,
which was at chance on that question and called 92 % of HaluEval's own passages insufficient
(``docs/research/sufficiency-rater/``). What it measures is whether the evidence is about the claim: it
tells off-topic evidence apart (held-out AUC 0.99 on the atomic claims) but not evidence that discusses a
claim from evidence that settles it (0.50 on AVeriTeC, as the model).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from agents.errors import InputError
from agents.scoring.selective import fit_logistic
from agents.scoring.signals import Signals
from schemas import EvidenceFit, Passage

FEATURES: tuple[str, ...] = ("best_passage_overlap", "evidence_overlap", "nli_forward", "nli_backward",
                             "log_passage_count")
DEFAULT_PATH = Path(__file__).with_name("sufficiency_rater.json")


def rater_features(signals: Signals, fit: EvidenceFit, passages: Sequence[Passage]) -> tuple[float, ...]:
    """The rater's inputs in the order of FEATURES (the overlaps are the first two claim signals)."""
    return (signals.values[0], signals.values[1], fit.nli_forward, fit.nli_backward, math.log1p(len(passages)))


@dataclass(frozen=True)
class SufficiencyRater:
    weights: tuple[float, ...]
    bias: float
    source: str = ""

    def probability(self, features: Sequence[float]) -> float:
        """The probability that the evidence settles the claim."""
        return 1.0 / (1.0 + math.exp(-(float(np.asarray(self.weights) @ np.asarray(features)) + self.bias)))

    @classmethod
    def load(cls, path: Path = DEFAULT_PATH) -> SufficiencyRater:
        try:
            data: dict[str, Any] = orjson.loads(Path(path).read_bytes())
            if tuple(data["features"]) != FEATURES:
                raise InputError(f"the sufficiency rater {path} reads other features: refit it with"
                                 " `halluwatch train-verifier --sufficiency-out OUT.json`")
            return cls(tuple(float(w) for w in data["weights"]), float(data["bias"]), str(data.get("source", path)))
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise InputError(f"cannot read the sufficiency rater {path} ({exc}): set HALLUWATCH_SUFFICIENCY_RATER"
                             " to a file `halluwatch train-verifier` wrote") from None

    def save(self, path: Path) -> None:
        data = {"features": FEATURES, "weights": self.weights, "bias": self.bias, "source": self.source}
        Path(path).write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")


def fit_rater(rows: Sequence[tuple[Sequence[float], bool]], source: str) -> SufficiencyRater:
    """A rater fitted on (features, evidence settled the claim) rows; the two classes weigh the same, since
    evidence that settles nothing is the rare one in labelled sets."""
    x = np.array([features for features, _ in rows], dtype=float)
    y = np.array([float(settled) for _, settled in rows])
    positives = max(float(y.sum()), 1.0)
    negatives = max(float(len(y) - y.sum()), 1.0)
    weights, bias = fit_logistic(x, y, sample_weight=np.where(y == 1.0, 1.0 / positives, 1.0 / negatives))
    return SufficiencyRater(tuple(float(w) for w in weights), bias, source)
