"""Does the judge read better with worked examples in its prompt? (issue #13, session 31)

The optional judge (Qwen2.5-Coder-1.5B-Instruct, `agents/model/judge.py`) is asked zero-shot for one letter.
Here the same question comes after six worked examples written for this test (`judge_few_shot.txt`, now in
`agents/model/prompts/`: made-up towns, bridges and trials, two per letter, nothing taken from any benchmark row). The examples are the
prompt's static part: the model reads them once, and every claim is read from that saved point on, so a
claim's letters do not depend on the claim before it and the examples cost no time per claim.

    python docs/research/qwen-profile/few_shot.py ~/.cache/halluwatch/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    python docs/research/qwen-profile/with_encoder.py      # the few-shot caches are its third block

Writes `cache/qwen-coder-1.5b-fewshot-{averitec,atomic}.json` in `score.py`'s format (resumes), and prints the
letters' own accuracy (no fit) on the even and the odd rows, for both prompts.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from agents.model.judge import LlamaLetters, judge_prompt
from agents.model.prompting import PromptTemplate

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import score  # noqa: E402  (the research scripts beside this one)

TEMPLATE = PromptTemplate.load("judge_few_shot")  # agents/model/prompts/judge_few_shot.txt, as shipped since
LABELS = ("true", "false", "unverifiable")


def extract(model_path: str) -> None:
    """The shipped judge's reader (its static part kept, each claim read from there) over the few-shot prompt."""
    from agents.evaluation.atomic_claims import read_atomic
    from agents.evaluation.datasets import read_averitec

    reader = LlamaLetters(Path(model_path), threads=2)
    reader.load([TEMPLATE.static])
    data = score.DATA / "averitec" / "dev-public.jsonl"
    for dataset, cases in (("averitec", read_averitec(data)), ("atomic", read_atomic(data))):
        path = score.CACHE / f"qwen-coder-1.5b-fewshot-{dataset}.json"
        cached = json.loads(path.read_text()) if path.exists() else {"seconds": 0.0, "rows": []}
        rows, done = list(cached["rows"]), {r["row"] for r in cached["rows"]}
        started = time.perf_counter()
        for n, case in enumerate(cases):
            if n in done:
                continue
            prompt = judge_prompt(TEMPLATE, case.turn.text, [p.text for p in case.passages])
            rows.append({"row": n, "gold": case.label.value, "logprobs": list(reader.letters(prompt))})
            if len(rows) % 20 == 0:
                path.write_text(json.dumps({"seconds": cached["seconds"] + time.perf_counter() - started, "rows": rows}))
        seconds = cached["seconds"] + time.perf_counter() - started
        path.write_text(json.dumps({"seconds": seconds, "rows": rows}))
        print(f"few-shot {dataset}: {len(rows)} items, {seconds / max(1, len(rows)):.2f} s/item", flush=True)


def letter_accuracy() -> None:
    """The letters alone (the likeliest one is the verdict), zero-shot and few-shot, even and odd rows."""
    for name in ("pipeline", "fewshot"):
        for dataset in ("averitec", "atomic"):
            path = score.CACHE / f"qwen-coder-1.5b-{name}-{dataset}.json"
            if not path.exists():
                continue
            rows = json.loads(path.read_text())["rows"]
            for parity, label in ((0, "even"), (1, "odd")):
                part = [r for r in rows if r["row"] % 2 == parity]
                pred = [LABELS[int(np.argmax(r["logprobs"]))] for r in part]
                gold = [r["gold"] for r in part]
                right = sum(p == g for p, g in zip(pred, gold))
                print(f"{name:8s} {dataset:8s} {label}: letter accuracy {right / len(part):.3f}"
                      f" macro-F1 {score.macro_f1(gold, pred, LABELS):.3f}"
                      f" predicted {dict((x, pred.count(x)) for x in LABELS)}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        extract(sys.argv[1])
    letter_accuracy()
