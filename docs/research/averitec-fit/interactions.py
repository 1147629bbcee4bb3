"""The judge's letters times one evidence signal, as three more features of the retrieved-evidence fit (session 34).

Over random halves (random_halves.py) a fit on AVeriTeC alone reads AVeriTeC better and the atomic claims far
worse than the shipped fit with the atomic rows: one linear fit weighs the letters one way for both kinds of
claim. Letters times a signal that differs between the kinds (how much of the claim the best passage holds, all
passages' overlap, the cross-encoder's reading) would let the fit weigh them by kind. Each variant is read over
the same 20 random halves as random_halves.py, with the atomic even rows in every fit, and on the even/odd split.
From the saved judgements; run from the repository root:

    python docs/research/averitec-fit/interactions.py [qwen-1.5b]
"""

import random
import statistics
import sys

from agents.scoring.calibration import FEATURE_NAMES, cross_validated_fit

sys.path.insert(0, "docs/research/averitec-fit")
from random_halves import JUDGE, SPLITS, rows_of, scored  # noqa: E402

LETTERS = (0, 1, 2)  # the model's (or the judge's) three label scores lead the row
SIGNALS = (None, "best_passage_overlap", "evidence_overlap", "nli_claim_then_evidence")


def with_products(row: tuple[float, ...], signal: str | None) -> tuple[float, ...]:
    if signal is None:
        return tuple(row)
    column = FEATURE_NAMES.index(signal)
    return tuple(row) + tuple(row[i] * row[column] for i in LETTERS)


def main() -> None:
    averitec = rows_of("docs/results/averitec-judgements.json")
    averitec_even = rows_of("docs/results/averitec-judgements.json", {0})
    averitec_odd = rows_of("docs/results/averitec-judgements.json", {1})
    atomic_even = rows_of("docs/results/atomic-judgements.json", {0})
    atomic_odd = rows_of("docs/results/atomic-judgements.json", {1})
    print(f"judge: {JUDGE or 'none (the shipped Gemma fit)'}; atomic even rows in every fit")
    for signal in SIGNALS:
        def moved(rows):
            return [(with_products(x, signal), y) for x, y in rows]

        rng = random.Random(1)
        halves = []
        for _ in range(SPLITS):
            order = list(range(len(averitec)))
            rng.shuffle(order)
            train = moved([averitec[i] for i in order[: len(order) // 2]] + atomic_even)
            fitted = cross_validated_fit([x for x, _ in train], [y for _, y in train])
            other = moved([averitec[i] for i in order[len(order) // 2:]])
            halves.append(scored(fitted, other) + (scored(fitted, moved(atomic_odd))[0],))
        train = moved(averitec_even + atomic_even)
        fitted = cross_validated_fit([x for x, _ in train], [y for _, y in train])
        odd, atomic = scored(fitted, moved(averitec_odd)), scored(fitted, moved(atomic_odd))
        print(f"letters x {signal or 'nothing (as shipped)'}: random halves AVeriTeC"
              f" {statistics.mean(h[0] for h in halves):.3f} / {statistics.mean(h[1] for h in halves):.3f},"
              f" atomic {statistics.mean(h[2] for h in halves):.3f}; even -> odd AVeriTeC {odd[0]:.3f} / {odd[1]:.3f},"
              f" atomic {atomic[0]:.3f}; {fitted.source}")


if __name__ == "__main__":
    main()
