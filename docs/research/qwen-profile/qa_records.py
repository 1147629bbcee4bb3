"""AVeriTeC's evidence records written as "Question: ... Answer: ..." for the judge (session 35).

The evaluation harness turns each AVeriTeC evidence record into one passage, the question and its answer joined
by a space (agents.evaluation.datasets.read_averitec): "What is the percentage growth in the SA police force
between 2002 to 2019 45.3%". Where the question has no question mark (65 of the 575 public records) the answer
runs on from it, and even with one the judge is left to find where the answer starts. This asks whether the
judge reads the records better when they say which part is which: every whole claim of the saved AVeriTeC and
atomic judgements is read again by the shipped judge (both prompts, averaged, as the verify stage does), beside
all its passages at once, each rewritten from the data file as "Question: Q Answer: A". Only the reading of all
together is redone (the per-passage letters would take another 70 minutes); the letters are cached:

    python docs/research/qwen-profile/qa_records.py read CACHE.json ../shared/data/averitec/dev-public.jsonl \
        docs/results/averitec-judgements.json docs/results/atomic-judgements.json      # ~30 minutes on 2 cores
    python docs/research/qwen-profile/qa_records.py compare CACHE.json ../shared/data/averitec/dev-public.jsonl \
        docs/results/averitec-judgements.json docs/results/atomic-judgements.json

``compare`` prints how well each reading's letters tell each label's claims from the rest on AVeriTeC's even
rows (AUC), then compares fits over 60 random halves of AVeriTeC's rows (per_passage.compare_over_halves, the
atomic even rows in every fit): the row as shipped before session 35 (the reading of all together only) against
the same row with the records' reading in its place, and the row as shipped now (with the per-passage letters)
against it with the records' reading in place of its reading of all together.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from agents.evaluation.harness import CaseResult, load_judgements
from agents.evaluation.metrics import roc_area
from agents.inputs import read_jsonl
from agents.model.judge import LlamaLetters, judge_prompt, judge_templates, letter_scores, mean_scores, packaged_model
from agents.scoring.calibration import FEATURE_NAMES, JUDGE_FEATURE_NAMES
from agents.stages.verify import judge_inputs, judge_reads
from schemas import Label, LabelScores
from stream.settings import Settings

sys.path.insert(0, str(Path(__file__).parent))
from per_passage import compare_over_halves  # noqa: E402
from reasoned import key, unread, whole_row  # noqa: E402

EACH_FEATURES = len(JUDGE_FEATURE_NAMES) - len(FEATURE_NAMES)  # the per-passage letters, last since session 35


def rewritten(data_path: Path) -> dict[str, str]:
    """Each record's passage text as the harness writes it -> the same record as "Question: Q Answer: A"."""
    texts: dict[str, str] = {}
    for _, row in read_jsonl(data_path):
        for item in row.get("evidence") or []:
            question, answer = str(item.get("question") or "").strip(), str(item.get("answer") or "").strip()
            explanation = str(item.get("boolean_explanation") or "").strip()
            tail = f" ({explanation})" if explanation else ""
            texts[f"{item.get('question', '')} {answer}{tail}".strip()] = f"Question: {question} Answer: {answer}{tail}"
    return texts


def whole_claim(case: CaseResult, texts: dict[str, str]) -> tuple[str, list[str]] | None:
    """The case's whole claim as the judge reads it and its passages rewritten, or None where the judge reads nothing."""
    if not case.whole or not judge_reads(case.whole[0].evidence):
        return None
    claims, passages = judge_inputs(case.whole[0].evidence)
    missing = [p for p in passages if p not in texts]
    if missing:
        raise SystemExit(f"{case.case_id}: a passage not found among the data file's records: {missing[0][:80]!r}")
    return claims[0], [texts[p] for p in passages]


def read(cache_path: Path, data_path: Path, paths: list[Path]) -> None:
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    texts = rewritten(data_path)
    todo = unread(cache, paths, lambda case: whole_claim(case, texts))
    settings = Settings.from_env()
    templates = judge_templates()
    reader = LlamaLetters(packaged_model(settings.model.cache_dir), settings.model.n_threads)
    reader.load([t.static for t in templates])  # as JudgeRunner does: the static parts first, so letters are exact
    start = time.monotonic()
    for n, (k, (claim, passages)) in enumerate(todo.items(), 1):
        scores = mean_scores([letter_scores(reader.letters(judge_prompt(t, claim, passages))) for t in templates])
        cache[k] = [scores.true, scores.false, scores.unverifiable]
        if n % 20 == 0 or n == len(todo):
            cache_path.write_text(json.dumps(cache))
            print(f"{n}/{len(todo)}, {(time.monotonic() - start) / n:.1f} s a claim", flush=True)


Rows = list[tuple[tuple[float, ...], Label]]


def rows_of(run, cache: dict, texts: dict[str, str], records: bool, each: bool, halves: tuple[bool, ...]) -> Rows:
    """Whole-claim fitting rows of the chosen halves; with ``records`` the records' reading stands for the reading
    of all together; without ``each`` the per-passage letters are left out (the row before session 35)."""
    rows: Rows = []
    for case in run.cases:
        item = whole_claim(case, texts)
        if case.position % 2 not in halves or item is None:
            continue
        row, label = whole_row(run.dataset, case, LabelScores(*cache[key(*item)]) if records else None)
        rows.append((row if each else row[:-EACH_FEATURES], label))
    return rows


def compare(cache_path: Path, data_path: Path, paths: list[Path], repeats: int = 60) -> None:
    cache = json.loads(cache_path.read_text())
    texts = rewritten(data_path)
    first, *others = [load_judgements(path) for path in paths]
    even = [c for c in first.cases if c.position % 2 == 0 and whole_claim(c, texts) is not None]
    for name, pick in (("plain records (shipped)", lambda c: c.whole[0].judgements[0].fit.judge),
                       ("Question/Answer records", lambda c: LabelScores(*cache[key(*whole_claim(c, texts))]))):
        letters = [(Label(c.gold), pick(c)) for c in even]
        print(f"{first.dataset} even rows, AUC of the judge's letters, {name}: " + ", ".join(
            f"{label.value} {roc_area([s.of(label) for g, s in letters if g is label], [s.of(label) for g, s in letters if g is not label]):.3f}"
            for label in Label))
    for each in (False, True):
        variants = {
            name: (rows_of(first, cache, texts, records, each, (0, 1)),
                   [r for run in others for r in rows_of(run, cache, texts, records, each, (0,))],
                   [r for run in others for r in rows_of(run, cache, texts, records, each, (1,))])
            for name, records in ((f"plain records{', + per-passage letters' if each else ''}", False),
                                  (f"Question/Answer records{', + per-passage letters (plain)' if each else ''}", True))
        }
        compare_over_halves(variants, first.dataset, repeats, seed=1)


if __name__ == "__main__":
    command, cache_file, data_file, *judgements = sys.argv[1:]
    if command == "read":
        read(Path(cache_file), Path(data_file), [Path(p) for p in judgements])
    elif command == "compare":
        compare(Path(cache_file), Path(data_file), [Path(p) for p in judgements])
