"""The judge reading each passage on its own, beside the claim (session 33).

The shipped judge reads a claim beside all its passages at once, as one list. AVeriTeC's evidence is a few
question-and-answer records (2 or 3 for most claims); a 1.5B model may weigh one record that settles the claim
less when others that do not are listed with it. This asks the shipped judge (both readings, averaged, as the
verify stage does) about every (claim, passage) pair of saved judgements and keeps the letters in a cache file,
so a later run reads only pairs it has not read yet:

    python docs/research/qwen-profile/per_passage.py read CACHE.json FILE.json [--even]   # about 1.3 s a reading
    python docs/research/qwen-profile/per_passage.py cv CACHE.json docs/results/averitec-judgements.json
    python docs/research/qwen-profile/per_passage.py held-out CACHE.json docs/results/averitec-judgements.json \
        [docs/results/atomic-judgements.json]
    python docs/research/qwen-profile/per_passage.py splits CACHE.json docs/results/averitec-judgements.json \
        [docs/results/atomic-judgements.json]

``cv`` prints, over the even rows of one file only, how well each reading's letters tell each label's claims
from the rest (AUC), and compares 5-fold cross-validated fits that differ only in what
stands for the judge: its reading of all passages together (as shipped), the per-passage letters pooled (the
most supporting and the most refuting passage), or both, and fits that keep the shipped reading and add the
per-passage letters as features. ``held-out`` then fits each of the latter on the even rows of that file
(or files) and reads the odd rows (each row's whole claim, without the rest of the pipeline): a paired check.
``splits`` (session 34) compares the same fits over 60 random halves of the first file's rows instead of the
one even/odd split. ``fill`` (session 35) writes the cached letters into saved judgements as the verify stage
now reads them (``EvidenceFit.judge_each``: the passages' letters averaged, in passage order; the reading of
all together where there is one passage), with the judge's prompt digest, so the judge's calibration can be
refitted without reading every pair again:

    python docs/research/qwen-profile/per_passage.py fill CACHE.json docs/results/averitec-judgements.json \
        docs/results/atomic-judgements.json
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.evaluation.harness import CaseResult, JudgedTurn, fitting_rows, load_judgements, save_judgements
from agents.evaluation.metrics import classification_metrics, roc_area
from agents.evaluation.provenance import judge_digest
from agents.model.judge import judge_runner, mean_scores
from agents.scoring.calibration import VerifyCalibration, cross_validated_fit
from agents.stages.verify import judge_inputs, judge_reads
from schemas import Label, LabelScores
from stream.settings import Settings

Letters = list[float]  # true, false, unverifiable
LABEL_NAMES = [label.value for label in Label]


def pairs_of(path: Path, even_only: bool) -> list[tuple[str, str]]:
    """Every (claim as read, passage) pair of the file's turns the judge reads, in file order, once each."""
    seen: dict[tuple[str, str], None] = {}
    for case in load_judgements(path).cases:
        if even_only and case.position % 2:
            continue
        for turn in case.judged + case.whole:
            if not judge_reads(turn.evidence):
                continue
            claims, passages = judge_inputs(turn.evidence)
            for claim in claims:
                for passage in passages:
                    seen[(claim, passage)] = None
    return list(seen)


def key(claim: str, passage: str) -> str:
    return json.dumps([claim, passage])


async def read(cache_path: Path, path: Path, even_only: bool) -> None:
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    todo = [p for p in pairs_of(path, even_only) if key(*p) not in cache]
    print(f"{len(todo)} pairs to read", flush=True)
    settings = Settings.from_env()
    judge = judge_runner("qwen-1.5b", settings.model.cache_dir, settings.model.n_threads)
    for n, (claim, passage) in enumerate(todo, 1):
        scores = (await judge.scores([claim], [passage]))[0].together
        cache[key(claim, passage)] = [scores.true, scores.false, scores.unverifiable]
        if n % 25 == 0 or n == len(todo):
            cache_path.write_text(json.dumps(cache))
            print(f"{n}/{len(todo)}", flush=True)
    judge.close()


def pooled(per_passage: Sequence[Letters], together: LabelScores) -> LabelScores:
    """The most supporting and the most refuting passage, and the least undecided one, renormalised."""
    true, false, undecided = max(p[0] for p in per_passage), max(p[1] for p in per_passage), min(p[2] for p in per_passage)
    total = true + false + undecided
    return LabelScores(true=true / total, false=false / total, unverifiable=undecided / total)


def averaged(per_passage: Sequence[Letters], together: LabelScores) -> LabelScores:
    """The passages' letters averaged."""
    n = len(per_passage)
    return LabelScores(*(sum(p[i] for p in per_passage) / n for i in range(3)))


def pooled_with_together(per_passage: Sequence[Letters], together: LabelScores) -> LabelScores:
    """The pooled letters and the shipped reading of all passages together, averaged."""
    p = pooled(per_passage, together)
    return LabelScores((p.true + together.true) / 2, (p.false + together.false) / 2,
                       (p.unverifiable + together.unverifiable) / 2)


VARIANTS: dict[str, Callable[[Sequence[Letters], LabelScores], LabelScores] | None] = {
    "all passages together (shipped)": None, "per passage, pooled": pooled, "per passage, averaged": averaged,
    "pooled and together, averaged": pooled_with_together,
}


def rows_of(dataset: str, case: CaseResult, cache: dict[str, Letters],
            combine=None) -> list[tuple[tuple[float, ...], Label]]:
    """The case's rows for the judge's calibration; with ``combine``, that in place of the reading of all together."""
    case = dataclasses.replace(case, judged=[with_variant(t, cache, combine) for t in case.judged],
                               whole=[with_variant(t, cache, combine) for t in case.whole])
    return fitting_rows(dataset, case, "qwen-1.5b")


def with_variant(turn: JudgedTurn, cache: dict[str, Letters], combine) -> JudgedTurn:
    if combine is None or not judge_reads(turn.evidence):
        return turn
    claims, passages = judge_inputs(turn.evidence)
    judgements = tuple(
        dataclasses.replace(j, fit=dataclasses.replace(
            j.fit, judge=combine([cache[key(claim, p)] for p in passages], j.fit.judge)))
        for claim, j in zip(claims, turn.judgements))
    return dataclasses.replace(turn, judgements=judgements)


# Per-passage letters as extra features beside the shipped reading (which stays in the row as it is).
EXTRAS: dict[str, Callable[[Sequence[Letters]], tuple[float, ...]]] = {
    "shipped row alone": lambda pp: (),
    "+ passages' letters averaged": lambda pp: tuple(sum(p[i] for p in pp) / len(pp) for i in range(3)),
    "+ most supporting and most refuting passage": lambda pp: (max(p[0] for p in pp), max(p[1] for p in pp)),
}


def extra_rows(run, cache: dict[str, Letters], extra, odd: bool) -> tuple[list[tuple[float, ...]], list]:
    """One row per case of the chosen half: its whole turn's shipped features, then the extra ones."""
    rows, labels = [], []
    for case in run.cases:
        if case.position % 2 != odd:
            continue
        [(row, label)] = rows_of(run.dataset, case, cache)
        claims, passages = judge_inputs(case.whole[0].evidence)
        rows.append(tuple(row) + extra([cache[key(claims[0], p)] for p in passages]))
        labels.append(label)
    return rows, labels


RowsOf = Callable[[Any, bool], tuple[list[tuple[float, ...]], list[Label]]]  # (run, odd) -> rows, labels


def paired_held_out(runs: Sequence[Any], variants: dict[str, RowsOf]) -> None:
    """Each variant fitted on the even rows of ``runs`` together, then each run's odd rows read apart; the rows a
    variant gets right and the first variant does not (and the reverse) are counted. Shared with reasoned.py."""
    first: dict[str, list[bool]] = {}
    for name, rows_of in variants.items():
        rows, labels = [], []
        for run in runs:
            r, g = rows_of(run, False)
            rows += r
            labels += g
        fitted = cross_validated_fit(rows, labels, source=name)
        print(fitted.source)
        for run in runs:
            rows, gold = rows_of(run, True)
            predicted = [fitted.combine(r).best() for r in rows]
            right = [p is g for p, g in zip(predicted, gold)]
            base = first.setdefault(run.dataset, right)
            scored = classification_metrics([g.value for g in gold], [p.value for p in predicted], LABEL_NAMES)
            print(f"  {run.dataset} odd rows ({len(rows)}): accuracy {sum(right) / len(right):.3f},"
                  f" macro-F1 {scored.macro_f1:.3f}; right only with this fit"
                  f" {sum(a and not b for a, b in zip(right, base))}, only with the first fit"
                  f" {sum(b and not a for a, b in zip(right, base))}")


def held_out(cache_path: Path, paths: Sequence[Path]) -> None:
    """Fit on the even rows of these files together, then read each file's odd rows: each row's whole claim,
    without the rest of the pipeline; rows right with one fit and wrong with the shipped one are counted."""
    held_out_with(json.loads(cache_path.read_text()), [load_judgements(path) for path in paths], EXTRAS)


def held_out_with(cache: dict[str, Letters], runs: Sequence[Any], extras: dict[str, Callable]) -> None:
    """:func:`paired_held_out` over the shipped rows plus each of ``extras`` (built from ``cache``). Shared with
    one_prompt.py."""
    paired_held_out(runs, {name: (lambda run, odd, extra=extra: extra_rows(run, cache, extra, odd))
                           for name, extra in extras.items()})


def cv(cache_path: Path, path: Path) -> None:
    cache = json.loads(cache_path.read_text())
    run = load_judgements(path)
    even = [c for c in run.cases if c.position % 2 == 0]
    # How well each reading's letter for a label tells that label's claims from the rest (whole claims).
    for name, combine in VARIANTS.items():
        letters = [(Label(c.gold), with_variant(c.whole[0], cache, combine).judgements[0].fit.judge) for c in even]
        print(f"AUC, {name}: " + ", ".join(
            f"{label.value} {roc_area([s.of(label) for g, s in letters if g is label], [s.of(label) for g, s in letters if g is not label]):.3f}"
            for label in Label))
    for name, combine in VARIANTS.items():
        rows, labels = [], []
        for case in even:
            for row, label in rows_of(run.dataset, case, cache, combine):
                rows.append(row)
                labels.append(label)
        fitted = cross_validated_fit(rows, labels, source=name)
        print(f"{fitted.source} ({len(rows)} rows)")
    for name, extra in EXTRAS.items():
        print(cross_validated_fit(*extra_rows(run, cache, extra, odd=False), source=name).source)


Rows = list[tuple[tuple[float, ...], Label]]


def scored(fitted: VerifyCalibration, part: Rows) -> tuple[float, float, float]:
    """A fit's accuracy, macro-F1 and log-loss over ``part``."""
    predicted = [fitted.combine(x).best().value for x, _ in part]
    gold = [y.value for _, y in part]
    log_loss = statistics.mean(-math.log(max(fitted.combine(x).of(y), 1e-9)) for x, y in part)
    return (sum(p == g for p, g in zip(predicted, gold)) / len(gold),
            classification_metrics(gold, predicted, LABEL_NAMES).macro_f1, log_loss)


def compare_over_halves(variants: dict[str, tuple[Rows, Rows, Rows]], dataset: str, repeats: int, seed: int) -> None:
    """Session 34: each variant's (rows, fixed, kept): ``rows`` are one file's rows, both halves, split at random in
    two ``repeats`` times (the same splits for every variant); a fit on one half plus ``fixed`` (other files' even
    rows, as the judge's calibration is fitted on the atomic rows) reads the other half and ``kept`` (their odd
    rows). Every variant is set against the first, split by split. Shared with reasoned.py."""
    accuracies: dict[str, list[float]] = {}
    for name, (rows, fixed, kept) in variants.items():
        rng = random.Random(seed)
        results = []
        for _ in range(repeats):
            order = list(range(len(rows)))
            rng.shuffle(order)
            train = [rows[i] for i in order[: len(rows) // 2]] + fixed
            fitted = cross_validated_fit([x for x, _ in train], [y for _, y in train], source=name)
            results.append(scored(fitted, [rows[i] for i in order[len(rows) // 2:]])
                           + (scored(fitted, kept)[0] if kept else float("nan"),))
        accuracies[name] = [r[0] for r in results]
        print(f"{name}: {dataset} other half accuracy {statistics.mean(accuracies[name]):.3f}"
              f" ({min(accuracies[name]):.2f} to {max(accuracies[name]):.2f}),"
              f" macro-F1 {statistics.mean(r[1] for r in results):.3f}, log-loss {statistics.mean(r[2] for r in results):.3f};"
              f" other files' odd rows accuracy {statistics.mean(r[3] for r in results):.3f} ({repeats} random halves)",
              flush=True)
    first, *rest = accuracies
    for name in rest:
        gains = [a - b for a, b in zip(accuracies[name], accuracies[first])]
        print(f"{name} against {first}: mean {statistics.mean(gains):+.3f} (sd {statistics.pstdev(gains):.3f}),"
              f" more accurate in {sum(g > 0 for g in gains)}, less in {sum(g < 0 for g in gains)} of {repeats} splits")


def splits(cache_path: Path, paths: Sequence[Path], repeats: int = 60) -> None:
    """The per-passage extras over random halves of the first file's rows (:func:`compare_over_halves`)."""
    halves_with(json.loads(cache_path.read_text()), [load_judgements(path) for path in paths], EXTRAS, repeats)


def halves_with(cache: dict[str, Letters], runs: Sequence[Any], extras: dict[str, Callable], repeats: int = 60) -> None:
    """The shipped rows plus each of ``extras`` over random halves of the first run's rows, the others' even rows
    in every fit. Shared with one_prompt.py."""
    first, *others = runs
    variants = {
        name: ([row for odd in (False, True) for row in zip(*extra_rows(first, cache, extra, odd))],
               [row for run in others for row in zip(*extra_rows(run, cache, extra, False))],
               [row for run in others for row in zip(*extra_rows(run, cache, extra, True))])
        for name, extra in extras.items()
    }
    compare_over_halves(variants, first.dataset, repeats, seed=1)


def every_passage(passages: Sequence[str], together: LabelScores) -> Sequence[str]:
    """The passages the shipped judge reads a claim beside alone: every one, where there are several."""
    return passages if len(passages) > 1 else []


def with_each(turn: JudgedTurn, cache: dict[str, Letters],
              alone: Callable[[Sequence[str], LabelScores], Sequence[str]] = every_passage) -> JudgedTurn:
    """The turn with each read claim's ``judge_each`` rebuilt from the cached letters: averaged over the passages
    ``alone`` picks (given the passages and the reading of all together), that reading itself where it picks none.
    Shared with passage_cap.py."""
    if not judge_reads(turn.evidence):
        return turn
    claims, passages = judge_inputs(turn.evidence)
    judgements = []
    for judgement, claim in zip(turn.judgements, claims):
        fit = judgement.fit
        if fit.judge is not None:
            read_alone = alone(passages, fit.judge)
            each = mean_scores([LabelScores(*cache[key(claim, p)]) for p in read_alone]) if read_alone else fit.judge
            fit = dataclasses.replace(fit, judge_each=each)
        judgements.append(dataclasses.replace(judgement, fit=fit))
    return dataclasses.replace(turn, judgements=tuple(judgements))


def fill(cache: dict[str, Letters], paths: Sequence[Path]) -> None:
    """Write ``cache``'s per-passage letters into the saved judgements at ``paths`` (:func:`with_each`)."""
    settings = Settings.from_env()
    judge = judge_runner("qwen-1.5b", settings.model.cache_dir, settings.model.n_threads)  # its prompts only

    for path in paths:
        run = load_judgements(path)
        for case in run.cases:
            case.judged = [with_each(t, cache) for t in case.judged]
            case.whole = [with_each(t, cache) for t in case.whole]
        run.judge_digest = judge_digest(run.cases, judge.templates)
        save_judgements(run, path)
        print(f"{path}: judge_each filled for {len(run.cases)} rows", flush=True)
    judge.close()


if __name__ == "__main__":
    command, first, *files = sys.argv[1:]
    paths = [Path(f) for f in files if not f.startswith("--")]
    if command == "read":
        asyncio.run(read(Path(first), paths[0], "--even" in files))
    elif command == "cv":
        cv(Path(first), paths[0])
    elif command == "held-out":
        held_out(Path(first), paths)
    elif command == "splits":
        splits(Path(first), paths)
    elif command == "fill":
        fill(json.loads(Path(first).read_text()), paths)
