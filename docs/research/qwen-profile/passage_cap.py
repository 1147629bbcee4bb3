"""A cap on the passages the judge reads alone (session 36).

Since session 35 the judge reads a claim beside all its passages together and then beside each passage alone,
two prompts each: a claim with n passages costs 2 (n + 1) readings. The retriever's top-k or a long
AVeriTeC record list makes n large (AVeriTeC claims: 1 to 11 passages, 3.6 views a claim on average). This
asks, from the cached per-passage letters (per_passage.py), what the fit loses when only the first k passages
are read alone: each claim's ``judge_each`` is recomputed over its first k passages (the reading of all
together where it has one passage, as shipped), every whole and atomic row is rebuilt, and each cap's fit is
read on the odd rows (fitted on the even rows with the atomic even rows, as shipped) and over the same 60 random
halves of AVeriTeC as session 34 (per_passage.compare_over_halves, which prints log-loss too since session 36).
No model is run (about 20 minutes on 2 cores); from the repository root:

    python docs/research/qwen-profile/passage_cap.py docs/research/qwen-profile/cache/qwen-coder-1.5b-per-passage.json \
        docs/results/averitec-judgements.json docs/results/atomic-judgements.json [--when-unsure]

With ``--when-unsure`` it asks a second question the same way: what is lost when the passages are read alone
only for claims whose reading of all together is unsure (no letter at or above a threshold).

Result (results-passage-cap.txt; README, session 36): two passages alone are as accurate over the halves as
all of them (0.608) for 29 % fewer readings, one alone loses the gain (0.584); every cap is slightly worse in
log-loss and loses held-out claims through the pipeline (0.600 -> 0.560 to 0.580). Reading alone only where the
reading of all is unsure saves little (its letters rarely pass 0.55) and loses more (0.595 at 0.45 and 0.5).
Neither shipped.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from agents.evaluation.harness import FAILED, fitting_rows, load_judgements
from agents.scoring.calibration import VerifyCalibration, cross_validated_fit
from agents.stages.verify import judge_inputs, judge_reads
from schemas import LabelScores

sys.path.insert(0, str(Path(__file__).parent))
from per_passage import Letters, Rows, compare_over_halves, scored, with_each  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Rule:
    """Which passages a claim is also read beside alone: the first ``cap`` (every one for None), and none at all
    where the reading of all together already gives one letter ``sure`` or more (never for None)."""

    cap: int | None = None
    sure: float | None = None

    def name(self) -> str:
        if self.sure is not None:
            return f"passages read alone only where no letter of the reading of all reaches {self.sure}"
        return "every passage alone (as shipped)" if self.cap is None else f"first {self.cap} passage(s) alone"

    def alone(self, passages: list[str], together: LabelScores) -> list[str]:
        if len(passages) < 2 or (self.sure is not None and together.of(together.best()) >= self.sure):
            return []
        return passages[: self.cap]


CAPS = [Rule(cap) for cap in (None, 1, 2, 3, 4)]
WHEN_UNSURE = [Rule()] + [Rule(sure=sure) for sure in (0.45, 0.5, 0.55)]  # session 36, second question


def rows(path: Path, cache: dict[str, Letters], rule: Rule, positions: set[int]) -> Rows:
    """The judge calibration's rows of these cases, each claim's per-passage letters rebuilt under ``rule``
    (whatever the saved judgements hold)."""
    run = load_judgements(path)
    out: Rows = []
    for case in run.cases:
        if case.predicted == FAILED or case.position % 2 not in positions:
            continue
        case = dataclasses.replace(case, judged=[with_each(t, cache, rule.alone) for t in case.judged],
                                   whole=[with_each(t, cache, rule.alone) for t in case.whole])
        out += fitting_rows(run.dataset, case, "qwen-1.5b")
    return out


def views(path: Path, rule: Rule) -> float:
    """The judge's views (prompts per reading) a claim costs on average under ``rule``."""
    counts = []
    for case in load_judgements(path).cases:
        for turn in case.judged + case.whole:
            if judge_reads(turn.evidence):
                claims, passages = judge_inputs(turn.evidence)
                counts += [1 + len(rule.alone(passages, j.fit.judge)) for j in turn.judgements if j.fit.judge]
    return sum(counts) / len(counts)


def odd_rows_and_halves(averitec: Path, atomic: Path, cache: dict[str, Letters],
                        rule: Rule) -> tuple[VerifyCalibration, float, float, tuple[Rows, Rows, Rows]]:
    """A fit on the even AVeriTeC and atomic rows (as shipped), its accuracy and log-loss on the odd AVeriTeC
    rows, and the rows :func:`per_passage.compare_over_halves` takes (AVeriTeC's in file order, atomic's even
    and odd). Shared with one_prompt.py."""
    even, odd = rows(averitec, cache, rule, {0}), rows(averitec, cache, rule, {1})
    atomic_even, atomic_odd = rows(atomic, cache, rule, {0}), rows(atomic, cache, rule, {1})
    fitted = cross_validated_fit([x for x, _ in even + atomic_even], [y for _, y in even + atomic_even])
    accuracy, _, log_loss = scored(fitted, odd)
    return fitted, accuracy, log_loss, (rows(averitec, cache, rule, {0, 1}), atomic_even, atomic_odd)


def main(cache_path: Path, averitec: Path, atomic: Path, rules: list[Rule], repeats: int = 60) -> None:
    cache = json.loads(cache_path.read_text())
    variants = {}
    for rule in rules:
        print(f"{rule.name()}: {views(averitec, rule):.2f} views a claim on AVeriTeC, {views(atomic, rule):.2f} on atomic")
        fitted, accuracy, log_loss, variants[rule.name()] = odd_rows_and_halves(averitec, atomic, cache, rule)
        print(f"  even rows -> odd rows (whole claims): accuracy {accuracy:.3f}, log-loss {log_loss:.3f};"
              f" {fitted.source.split('chosen by ')[-1]}", flush=True)
    compare_over_halves(variants, "AVeriTeC", repeats, seed=1)  # the same 60 halves as session 34


if __name__ == "__main__":
    main(*(Path(a) for a in sys.argv[1:4]), rules=WHEN_UNSURE if "--when-unsure" in sys.argv else CAPS)
