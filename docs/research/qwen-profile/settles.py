"""The judge asked whether the evidence settles a claim at all (session 35).

Sufficient-context raters (one of the two papers behind this project) ask a model whether the context is
enough to answer, apart from what the answer is. The judge's letters tell AVeriTeC's true claims (AUC 0.921)
and false ones (0.845) from the rest, but not its unverifiable ones (0.477 read beside all passages, 0.590
per passage averaged). This asks the judge's model the sufficiency question alone (``judge_settles.txt`` in
this folder: A, the evidence settles the claim; B, it leaves it open), once per whole claim of the saved
AVeriTeC and atomic judgements, beside all its passages as the judge reads them, and keeps p(settled) in a
cache:

    python docs/research/qwen-profile/settles.py read CACHE.json docs/results/averitec-judgements.json \
        docs/results/atomic-judgements.json                                # ~20 minutes on 2 cores
    python docs/research/qwen-profile/settles.py compare CACHE.json docs/results/averitec-judgements.json \
        docs/results/atomic-judgements.json

``compare`` prints the AUC of p(settled) against AVeriTeC's unverifiable claims on its even rows, then the
shipped row against the shipped row + p(settled) as one more feature over 60 random halves of AVeriTeC's rows
(per_passage.compare_over_halves, the atomic even rows in every fit).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from agents.evaluation.harness import load_judgements
from agents.evaluation.metrics import roc_area
from agents.model.judge import LlamaLetters, judge_prompt, packaged_model
from agents.model.prompting import PromptTemplate
from schemas import Label
from stream.settings import Settings

sys.path.insert(0, str(Path(__file__).parent))
from per_passage import compare_over_halves  # noqa: E402
from reasoned import key, unread, whole_claim, whole_row  # noqa: E402  (the whole claim as the judge reads it)

TEMPLATE = PromptTemplate.load("judge_settles", directory=Path(__file__).parent)


def read(cache_path: Path, paths: list[Path]) -> None:
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    todo = unread(cache, paths)
    settings = Settings.from_env()
    reader = LlamaLetters(packaged_model(settings.model.cache_dir), settings.model.n_threads)
    reader.load([TEMPLATE.static])
    start = time.monotonic()
    for n, (k, (claim, passages)) in enumerate(todo.items(), 1):
        settled, open_, _ = reader.letters(judge_prompt(TEMPLATE, claim, passages))
        top = max(settled, open_)
        cache[k] = math.exp(settled - top) / (math.exp(settled - top) + math.exp(open_ - top))
        if n % 20 == 0 or n == len(todo):
            cache_path.write_text(json.dumps(cache))
            print(f"{n}/{len(todo)}, {(time.monotonic() - start) / n:.1f} s a claim", flush=True)


Rows = list[tuple[tuple[float, ...], Label]]


def rows_of(run, cache: dict, settles: bool, halves: tuple[int, ...]) -> Rows:
    rows: Rows = []
    for case in run.cases:
        item = whole_claim(case)
        if case.position % 2 not in halves or item is None:
            continue
        row, label = whole_row(run.dataset, case, None)
        rows.append((row + ((cache[key(*item)],) if settles else ()), label))
    return rows


def compare(cache_path: Path, paths: list[Path], repeats: int = 60) -> None:
    cache = json.loads(cache_path.read_text())
    first, *others = [load_judgements(path) for path in paths]
    for run in (first, *others):
        scored = [(Label(c.gold), cache[key(*whole_claim(c))]) for c in run.cases
                  if c.position % 2 == 0 and whole_claim(c) is not None]
        for label in Label:
            inside = [p for g, p in scored if g is label]
            if inside:
                # AUC of "left open" (1 - p(settled)): how well it tells this label's claims from the rest.
                print(f"{run.dataset} even rows: AUC of p(left open), {label.value} claims against the rest"
                      f" {roc_area([1 - p for p in inside], [1 - p for g, p in scored if g is not label]):.3f}"
                      f" (mean p(settled) {sum(inside) / len(inside):.2f} over {len(inside)})")
    variants = {
        name: (rows_of(first, cache, settles, (0, 1)),
               [r for run in others for r in rows_of(run, cache, settles, (0,))],
               [r for run in others for r in rows_of(run, cache, settles, (1,))])
        for name, settles in (("shipped row", False), ("+ p(settled)", True))
    }
    compare_over_halves(variants, first.dataset, repeats, seed=1)


if __name__ == "__main__":
    command, cache_file, *judgements = sys.argv[1:]
    if command == "read":
        read(Path(cache_file), [Path(p) for p in judgements])
    elif command == "compare":
        compare(Path(cache_file), [Path(p) for p in judgements])
