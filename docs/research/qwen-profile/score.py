"""Can a larger local model judge? Zero-shot label scores of a GGUF model on HaluEval QA and AVeriTeC.

Research for issue #13 (the optional larger profile): Qwen2.5-Coder-1.5B-Instruct Q4_K_M (the only complete
larger instruct GGUF in the registries) against the embedded Gemma 3 270M, with one prompt for both.

For every item the model reads the evidence and the claim and the script keeps the log-probabilities of
the answer words at the next token (one forward pass, no generation):
* HaluEval QA: "yes" / "no" to "Does the passage support this answer?", for the right and the
  hallucinated answer of each row;
* AVeriTeC: "A" (supported) / "B" (refuted) / "C" (not enough evidence) for the claim with its
  question/answer evidence.

Usage (features are cached per model, so ``fit`` reruns in seconds):
    python docs/research/qwen-profile/score.py extract MODEL.gguf NAME [--chat chatml|none] [--halueval-rows N] [--averitec-rows N]
    python docs/research/qwen-profile/score.py fit NAME

``fit`` decides on the even rows (threshold or a small logistic regression) and reports the odd rows.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
CACHE = Path(__file__).resolve().parent / "cache"
EVIDENCE_CHARS = 1500
AVERITEC_LABELS = ("true", "false", "unverifiable")

SYSTEM = "You check facts. Answer with one word or letter only."
HALUEVAL_TASK = (
    "Passage: {passage}\n\nQuestion: {question}\nProposed answer: {answer}\n\n"
    "Does the passage support the proposed answer? Reply yes or no."
)
AVERITEC_TASK = (
    "Evidence (questions a fact-checker asked, with the answers found):\n{evidence}\n\nClaim: {claim}\n\n"
    "Given only this evidence, is the claim\nA) supported\nB) refuted\nC) not decided by the evidence\n"
    "Reply with the letter."
)


def wrap(task: str, chat: str) -> str:
    if chat == "chatml":
        return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{task}<|im_end|>\n"
                "<|im_start|>assistant\n")
    return f"{SYSTEM}\n\n{task}\nReply:"


def next_token_logprobs(llm, prompt: str, words: tuple[str, ...]) -> list[float]:
    """Log-probability of each answer word as the next token (the best of its spellings). The prompt's
    prefix shared with the previous item (the passage, for HaluEval's two answers) is not read again."""
    from agents.model import llama_adapter

    tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
    keep = 0
    for a, b in zip(llm.eval_tokens, tokens[:-1]):
        if a != b:
            break
        keep += 1
    llama_adapter.rewind(llm, keep)
    llm.eval(tokens[keep:])
    logits = np.asarray(llama_adapter.logits_row(llm, -1), dtype=np.float64)
    logprobs = logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
    found = []
    for word in words:
        spellings = {word, word.capitalize(), word.upper(), " " + word, " " + word.capitalize(), " " + word.upper()}
        ids = {t[0] for t in (llm.tokenize(s.encode(), add_bos=False, special=False) for s in spellings) if len(t) == 1}
        found.append(float(max(logprobs[i] for i in ids)) if ids else -30.0)
    return found


def halueval_items(limit: int | None):
    for n, line in enumerate((DATA / "halueval-qa" / "dev-public.jsonl").open()):
        if limit is not None and n >= limit:
            break
        row = json.loads(line)
        for answer, hallucination in ((row["right_answer"], False), (row["hallucinated_answer"], True)):
            yield n, hallucination, HALUEVAL_TASK.format(passage=row["knowledge"][:EVIDENCE_CHARS],
                                                         question=row["question"], answer=answer)


def averitec_items(limit: int | None):
    for n, line in enumerate((DATA / "averitec" / "dev-public.jsonl").open()):
        if limit is not None and n >= limit:
            break
        row = json.loads(line)
        lines = []
        for item in row.get("evidence") or []:
            answer = str(item.get("answer") or "").strip()
            lines.append(f"- {item.get('question', '')} {answer}".strip())
        evidence = "\n".join(lines)[:EVIDENCE_CHARS] or "(none)"
        yield n, row["label"], AVERITEC_TASK.format(evidence=evidence, claim=row["claim"])


def extract(model_path: str, name: str, chat: str, halueval_rows: int | None, averitec_rows: int | None) -> None:
    from llama_cpp import Llama

    llm = Llama(model_path=model_path, n_ctx=2048, n_threads=2, verbose=False)
    CACHE.mkdir(exist_ok=True)
    for dataset, items, words in (("averitec", averitec_items(averitec_rows), ("A", "B", "C")),
                                  ("halueval", halueval_items(halueval_rows), ("yes", "no"))):
        rows = []
        started = time.perf_counter()
        for n, gold, task in items:
            rows.append({"row": n, "gold": gold, "logprobs": next_token_logprobs(llm, wrap(task, chat), words)})
        seconds = time.perf_counter() - started
        (CACHE / f"{name}-{dataset}.json").write_text(json.dumps({"seconds": seconds, "rows": rows}))
        print(f"{name} {dataset}: {len(rows)} items, {seconds / max(1, len(rows)):.2f} s/item", flush=True)


def macro_f1(gold: list, pred: list, labels) -> float:
    scores = []
    for label in labels:
        tp = sum(g == label and p == label for g, p in zip(gold, pred))
        fp = sum(g != label and p == label for g, p in zip(gold, pred))
        fn = sum(g == label and p != label for g, p in zip(gold, pred))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(scores) / len(scores)


def softmax_fit(x: np.ndarray, y: np.ndarray, classes: int, balanced: bool, l2: float = 0.1) -> np.ndarray:
    """Multinomial logistic regression by gradient descent (weights include a bias column)."""
    x = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros((x.shape[1], classes))
    counts = np.bincount(y, minlength=classes).astype(float)
    weight = (len(y) / (classes * np.maximum(counts, 1)))[y] if balanced else np.ones(len(y))
    onehot = np.eye(classes)[y]
    for _ in range(3000):
        z = x @ w
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        grad = x.T @ ((p - onehot) * weight[:, None]) / len(y) + l2 * np.vstack([w[:-1], np.zeros((1, classes))])
        w -= 0.5 * grad
    return w


def softmax_predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (np.hstack([x, np.ones((len(x), 1))]) @ w).argmax(axis=1)


def fit(name: str) -> None:
    halu = json.loads((CACHE / f"{name}-halueval.json").read_text())
    rows = halu["rows"]
    margin = [r["logprobs"][0] - r["logprobs"][1] for r in rows]  # yes minus no
    even = [(m, r["gold"]) for m, r in zip(margin, rows) if r["row"] % 2 == 0]
    odd = [(m, r["gold"]) for m, r in zip(margin, rows) if r["row"] % 2 == 1]

    def accuracy(items, threshold):
        return sum((m < threshold) == gold for m, gold in items) / len(items)  # below threshold: hallucination

    candidates = sorted({m for m, _ in even})
    best = max(candidates, key=lambda t: accuracy(even, t)) if candidates else 0.0
    for label, threshold in (("zero-shot (yes > no)", 0.0), (f"threshold {best:.2f} fitted on even rows", best)):
        gold = [g for _, g in odd]
        pred = [m < threshold for m, _ in odd]
        print(f"{name} halueval odd rows ({len(odd)} answers), {label}: accuracy {accuracy(odd, threshold):.3f}"
              f" macro-F1 {macro_f1(gold, pred, (False, True)):.3f}")
    print(f"  {halu['seconds'] / len(rows):.2f} s/answer")

    ave = json.loads((CACHE / f"{name}-averitec.json").read_text())
    x = np.array([r["logprobs"] for r in ave["rows"]])
    x = x - x.max(axis=1, keepdims=True)  # log-probs relative to the best letter
    y = np.array([AVERITEC_LABELS.index(r["gold"]) for r in ave["rows"]])
    parity = np.array([r["row"] % 2 for r in ave["rows"]])
    odd_gold = [AVERITEC_LABELS[i] for i in y[parity == 1]]
    zero = [AVERITEC_LABELS[i] for i in x[parity == 1].argmax(axis=1)]
    print(f"{name} averitec odd rows ({len(odd_gold)} claims), zero-shot letter: accuracy"
          f" {sum(a == b for a, b in zip(odd_gold, zero)) / len(odd_gold):.3f}"
          f" macro-F1 {macro_f1(odd_gold, zero, AVERITEC_LABELS):.3f}")
    for balanced in (False, True):
        w = softmax_fit(x[parity == 0], y[parity == 0], 3, balanced)
        pred = [AVERITEC_LABELS[i] for i in softmax_predict(w, x[parity == 1])]
        counts = {label: pred.count(label) for label in AVERITEC_LABELS}
        print(f"  logistic regression on the 3 log-probs, fitted on even rows ({'balanced' if balanced else 'unweighted'}):"
              f" accuracy {sum(a == b for a, b in zip(odd_gold, pred)) / len(odd_gold):.3f}"
              f" macro-F1 {macro_f1(odd_gold, pred, AVERITEC_LABELS):.3f} predicted {counts}")
    majority = max(AVERITEC_LABELS, key=lambda label: list(y[parity == 0]).count(AVERITEC_LABELS.index(label)))
    print(f"  majority of even rows ({majority}): accuracy {odd_gold.count(majority) / len(odd_gold):.3f}")
    print(f"  {ave['seconds'] / len(ave['rows']):.2f} s/claim")


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "extract":
        chat = rest[rest.index("--chat") + 1] if "--chat" in rest else "none"
        rows = {flag: int(rest[rest.index(flag) + 1]) if flag in rest else None
                for flag in ("--halueval-rows", "--averitec-rows")}
        extract(rest[0], rest[1], chat, rows["--halueval-rows"], rows["--averitec-rows"])
    elif command == "fit":
        fit(rest[0])
    else:
        raise SystemExit(f"unknown command {command!r}: use extract or fit")
