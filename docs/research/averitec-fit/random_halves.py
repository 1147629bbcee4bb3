"""The retrieved-evidence fit over random halves of AVeriTeC, with and without the atomic rows (session 34).

One even/odd split of 100 claims moves a fit's accuracy by several claims on its own (../qwen-profile/
results-reasoned.txt), so this reads the shipped recipe over 20 random halves of all 200 public AVeriTeC rows:
fit on one half (L2 by the shipped 5-fold cross-validation), read the other half, and read the atomic claims'
odd rows with the same fit. Two recipes: AVeriTeC's half alone, and AVeriTeC's half with the atomic even rows
(as the shipped calibrations are fitted). From the saved judgements, no model; run from the repository root:

    python docs/research/averitec-fit/random_halves.py [qwen-1.5b]
"""

import random
import statistics
import sys
from pathlib import Path

from agents.evaluation.harness import FAILED, fitting_rows, load_judgements
from agents.evaluation.metrics import classification_metrics
from agents.scoring.calibration import VerifyCalibration, cross_validated_fit
from schemas import Label

JUDGE = sys.argv[1] if len(sys.argv) > 1 else None
SPLITS = 20
Row = tuple[tuple[float, ...], Label]


def rows_of(path: str, positions: set[int] | None = None) -> list[Row]:
    run = load_judgements(Path(path))
    return [row for case in run.cases if case.predicted != FAILED and (positions is None or case.position % 2 in positions)
            for row in fitting_rows(run.dataset, case, JUDGE)]


def scored(fitted: VerifyCalibration, rows: list[Row]) -> tuple[float, float]:
    predicted = [fitted.combine(x).best().value for x, _ in rows]
    gold = [label.value for _, label in rows]
    accuracy = sum(p == g for p, g in zip(predicted, gold)) / len(gold)
    return accuracy, classification_metrics(gold, predicted, [label.value for label in Label]).macro_f1


def main() -> None:
    averitec = rows_of("docs/results/averitec-judgements.json")
    atomic_even = rows_of("docs/results/atomic-judgements.json", {0})
    atomic_odd = rows_of("docs/results/atomic-judgements.json", {1})
    rng = random.Random(1)
    results: dict[str, list[tuple[float, float, float]]] = {"AVeriTeC half alone": [], "with the atomic even rows": []}
    for _ in range(SPLITS):
        order = list(range(len(averitec)))
        rng.shuffle(order)
        half, other = [averitec[i] for i in order[: len(order) // 2]], [averitec[i] for i in order[len(order) // 2:]]
        for name, train in zip(results, (half, half + atomic_even)):
            fitted = cross_validated_fit([x for x, _ in train], [y for _, y in train])
            results[name].append(scored(fitted, other) + (scored(fitted, atomic_odd)[0],))
    print(f"judge: {JUDGE or 'none (the shipped Gemma fit)'}; {SPLITS} random halves of {len(averitec)} AVeriTeC rows")
    for name, runs in results.items():
        accuracies = [r[0] for r in runs]
        print(f"{name}: AVeriTeC other half accuracy {statistics.mean(accuracies):.3f}"
              f" ({min(accuracies):.2f} to {max(accuracies):.2f}), macro-F1 {statistics.mean(r[1] for r in runs):.3f};"
              f" atomic odd rows accuracy {statistics.mean(r[2] for r in runs):.3f}")


if __name__ == "__main__":
    main()
