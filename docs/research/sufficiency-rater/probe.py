"""How well the Gemma model's sufficiency ratings, kept in the saved judgements, tell evidence that settled a
claim from evidence that did not (issue #13, session 23). The fitted rater that replaced it is measured by
`halluwatch train-verifier` (its "sufficiency (odd rows)" table).

    python docs/research/sufficiency-rater/probe.py

A claim's evidence settled it when the gold label is true or false, and did not when it is unverifiable;
a grounded answer's own document (HaluEval, the bundled reworded answers) always settles it.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from agents.evaluation.harness import GROUNDED_QA, load_judgements
from agents.evaluation.metrics import roc_area

RESULTS = Path(__file__).resolve().parents[2] / "results"


def main() -> None:
    for kind in ("averitec", "halueval", "paraphrase"):
        run = load_judgements(RESULTS / f"{kind}-judgements.json")
        for rows in ("all", "odd"):
            settled, unsettled = [], []
            for case in run.cases:
                if rows == "odd" and case.position % 2 == 0:
                    continue
                ratings = [s.probability for turn in case.judged for s in turn.sufficiency]
                ok = kind in GROUNDED_QA or case.gold != "unverifiable"
                (settled if ok else unsettled).extend(ratings)
            line = (f"{kind:10s} {rows:3s} rows: {len(settled) + len(unsettled)} claims rated,"
                    f" settled ones called sufficient {sum(p >= 0.5 for p in settled) / len(settled):.2f}")
            if unsettled:
                line += (f", mean probability {statistics.fmean(settled):.3f} settled / {statistics.fmean(unsettled):.3f}"
                         f" not, AUC {roc_area(settled, unsettled):.3f}")
            print(line)


if __name__ == "__main__":
    main()
