"""Each passage read alone with one of the judge's two prompts instead of both (session 37).

The shipped judge reads a claim with n passages 2 (n + 1) times: both prompts beside all passages together, and
both beside each passage alone. Session 36 found that reading fewer passages alone loses held-out claims. This
asks whether one prompt per passage keeps what the per-passage letters bring: 2 + n readings a claim instead of
2 (n + 1). It reads the worked-examples prompt (``judge_few_shot``) beside every (claim, passage) pair of
session 33's cache; since the cache holds the two prompts' letters averaged, the plain prompt's letters follow
from it (twice the average less the worked-examples reading), and ``read`` checks that on the first pairs by
reading the plain prompt too:

    python docs/research/qwen-profile/one_prompt.py read CACHE.json ONE_PROMPT.json      # about 0.7 s a pair
    python docs/research/qwen-profile/one_prompt.py compare CACHE.json ONE_PROMPT.json \
        docs/results/averitec-judgements.json docs/results/atomic-judgements.json

``compare`` rebuilds the per-passage letters of every AVeriTeC and atomic row three ways (both prompts, as
shipped; the plain prompt only; the worked examples only) and reads each fit on the 60 random halves of
sessions 34 to 36 (accuracy and log-loss), as ``passage_cap.py`` does. ``fill CACHE ONE_PROMPT PROMPT FILES``
writes one prompt's per-passage letters into saved judgements, to refit the judge's calibration and read the
odd rows through the pipeline with that prompt alone.

Result (results-one-prompt.txt; README, session 37): 4.64 readings a claim instead of 7.28; over the 60 halves the
plain prompt alone 0.603 (log-loss 0.891), the worked examples alone 0.606 (0.885), both 0.608 (0.887); through
the pipeline 0.570, 0.590 and 0.600 on the odd rows. Not shipped. ``apart`` (the two prompts' per-passage letters
as features of their own, no reading added): 0.612 against 0.613 over the halves; the average stays.

    python docs/research/qwen-profile/one_prompt.py apart ONE_PROMPT.json docs/results/averitec-judgements.json \
        docs/results/atomic-judgements.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from passage_cap import Rule, odd_rows_and_halves, views
from per_passage import EXTRAS, Letters, compare_over_halves, fill, halves_with, held_out_with

from agents.evaluation.harness import load_judgements
from agents.model.judge import PROMPTS, LlamaLetters, judge_prompt, judge_templates, letter_scores, packaged_model
from stream.settings import Settings

CHECKED = 5  # pairs whose plain reading is read too, to check it follows from the cache's average


def other_prompt(averaged: Letters, one: Letters) -> Letters:
    """The letters of the prompt not read, from the two prompts' average and the one read."""
    return [2 * a - o for a, o in zip(averaged, one)]


def read(cache_path: Path, out_path: Path) -> None:
    cache: dict[str, Letters] = json.loads(cache_path.read_text())
    out: dict[str, Letters] = json.loads(out_path.read_text()) if out_path.exists() else {}
    settings = Settings.from_env()
    plain, few_shot = judge_templates()
    reader = LlamaLetters(packaged_model(settings.model.cache_dir), settings.model.n_threads)
    reader.load([plain.static, few_shot.static])  # both, in the runner's order: the letters match its readings
    todo = [k for k in cache if k not in out]
    print(f"{len(todo)} pairs to read", flush=True)
    for n, pair in enumerate(todo, 1):
        claim, passage = json.loads(pair)
        scores = letter_scores(reader.letters(judge_prompt(few_shot, claim, [passage])))
        out[pair] = [scores.true, scores.false, scores.unverifiable]
        if n <= CHECKED:
            read_plain = letter_scores(reader.letters(judge_prompt(plain, claim, [passage])))
            derived = other_prompt(cache[pair], out[pair])
            gap = max(abs(a - b) for a, b in zip(derived, [read_plain.true, read_plain.false, read_plain.unverifiable]))
            print(f"check {n}: plain letters read vs derived from the cache differ by at most {gap:.2e}", flush=True)
        if n % 50 == 0 or n == len(todo):
            out_path.write_text(json.dumps(out))
            print(f"{n}/{len(todo)}", flush=True)


def per_prompt(cache: dict[str, Letters], one: dict[str, Letters]) -> dict[str, dict[str, Letters]]:
    """The per-passage letters as shipped (both prompts averaged) and with each prompt alone."""
    return {
        "both prompts (shipped)": cache,
        f"{PROMPTS[0]} only": {k: other_prompt(cache[k], one[k]) for k in cache},
        f"{PROMPTS[1]} only": {k: one[k] for k in cache},
    }


def compare(cache_path: Path, one_path: Path, averitec: Path, atomic: Path, repeats: int = 60) -> None:
    every = Rule()  # every passage read alone, as shipped
    n = views(averitec, every) - 1  # passages read alone a claim, on average
    print(f"readings a claim on AVeriTeC: both prompts per passage {2 * (n + 1):.2f}, one prompt {2 + n:.2f}")
    variants = {}
    for name, letters in per_prompt(json.loads(cache_path.read_text()), json.loads(one_path.read_text())).items():
        _, accuracy, log_loss, variants[name] = odd_rows_and_halves(averitec, atomic, letters, every)
        print(f"{name}: even rows -> odd rows (whole claims): accuracy {accuracy:.3f}, log-loss {log_loss:.3f}",
              flush=True)
    compare_over_halves(variants, "AVeriTeC", repeats, seed=1)  # the same 60 halves as sessions 34 to 36


def apart(one_path: Path, averitec: Path, atomic: Path) -> None:
    """Both prompts' per-passage letters as features of their own: the shipped row (which holds their average) plus
    the worked examples' letters averaged over the passages, which together carry each prompt's letters apart.
    No reading is added; the fit has three more weights."""
    one = json.loads(one_path.read_text())
    runs = [load_judgements(averitec), load_judgements(atomic)]
    extras = {"shipped row": EXTRAS["shipped row alone"],
              "+ worked examples' per-passage letters": EXTRAS["+ passages' letters averaged"]}
    held_out_with(one, runs, extras)
    halves_with(one, runs, extras)


def fill_one(cache_path: Path, one_path: Path, prompt: str, files: list[Path]) -> None:
    """Write the per-passage letters of ``prompt`` (a name in PROMPTS) alone into saved judgements."""
    fill(per_prompt(json.loads(cache_path.read_text()), json.loads(one_path.read_text()))[f"{prompt} only"], files)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    paths = [Path(a) for a in args]
    if command == "read":
        read(*paths)
    elif command == "compare":
        compare(*paths)
    elif command == "apart":
        apart(*paths)
    elif command == "fill":
        fill_one(paths[0], paths[1], args[2], paths[3:])
    else:
        raise SystemExit(f"unknown command {command!r}: read, compare, apart or fill")
