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
    python docs/research/qwen-profile/score.py extract-pipeline MODEL.gguf NAME [--chat chatml|none]
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
RESULTS = Path(__file__).resolve().parents[2] / "results"  # the shipped pipeline's eval reports
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


DIAHALU_TASK = (
    "A chatbot conversation:\n{dialogue}\n\n"
    "Does the assistant's last reply state something that is factually false or made up? Reply yes or no."
)


def diahalu_items(limit: int | None):
    """One item per assistant turn, with the conversation up to that turn (the prefix is shared, so a
    dialogue's turns cost little more than the dialogue). Gold: the turn is one DiaHalu marks as
    hallucinated; the dialogue label is the item's ``row`` label, kept in ``dialogue``."""
    for n, line in enumerate((DATA / "diahalu" / "dev-public.jsonl").open()):
        if limit is not None and n >= limit:
            break
        row = json.loads(line)
        seen = []
        for turn in row["turns"]:
            seen.append(f"{'User' if turn['role'] == 'user' else 'Assistant'}: {turn['text']}")
            if turn["role"] == "assistant":
                gold = {"turn": turn["speaker"], "hallucinated": turn["speaker"] in row["hallucinated_turns"],
                        "dialogue": row["label"]}
                yield n, gold, DIAHALU_TASK.format(dialogue="\n".join(seen)[-4000:])


# The profile's own prompt would not know AVeriTeC's question/answer shape: the same letters, asked of the
# passages exactly as the pipeline gives them to its verifier (a pair's text with its explanation).
PIPELINE_TASK = (
    "Evidence:\n{evidence}\n\nClaim: {claim}\n\n"
    "Given only this evidence, is the claim\nA) supported\nB) refuted\nC) not decided by the evidence\n"
    "Reply with the letter."
)


def pipeline_items(dataset: str):
    """AVeriTeC's claims or the atomic claims made from them, with the passages the eval harness checks
    them against (``agents.evaluation``), in its order: ``row`` is the eval's position, so its parity is the
    shipped fit's split."""
    from agents.evaluation.atomic_claims import read_atomic
    from agents.evaluation.datasets import read_averitec

    path = DATA / "averitec" / "dev-public.jsonl"
    for n, case in enumerate(read_atomic(path) if dataset == "atomic" else read_averitec(path)):
        evidence = "\n".join(f"- {p.text}" for p in case.passages)[:EVIDENCE_CHARS] or "(none)"
        yield n, case.label.value, PIPELINE_TASK.format(evidence=evidence, claim=case.turn.text)


def extract_pipeline(model_path: str, name: str, chat: str) -> None:
    """Letter log-probabilities for ``pipeline_items`` of both sets (cached as NAME-pipeline-DATASET.json)."""
    from llama_cpp import Llama

    llm = Llama(model_path=model_path, n_ctx=2048, n_threads=2, verbose=False)
    CACHE.mkdir(exist_ok=True)
    for dataset in ("averitec", "atomic"):
        path = CACHE / f"{name}-pipeline-{dataset}.json"
        cached = json.loads(path.read_text()) if path.exists() else {"seconds": 0.0, "rows": []}
        rows, done = list(cached["rows"]), {r["row"] for r in cached["rows"]}
        started = time.perf_counter()
        for n, gold, task in pipeline_items(dataset):
            if n not in done:
                rows.append({"row": n, "gold": gold,
                             "logprobs": next_token_logprobs(llm, wrap(task, chat), ("A", "B", "C"))})
                if len(rows) % 20 == 0:  # a long run keeps what it has
                    path.write_text(json.dumps({"seconds": cached["seconds"] + time.perf_counter() - started,
                                                "rows": rows}))
        seconds = cached["seconds"] + time.perf_counter() - started
        path.write_text(json.dumps({"seconds": seconds, "rows": rows}))
        print(f"{name} pipeline {dataset}: {len(rows)} items, {seconds / max(1, len(rows)):.2f} s/item", flush=True)


def extract(model_path: str, name: str, chat: str, halueval_rows: int | None, averitec_rows: int | None,
            diahalu_rows: int | None) -> None:
    from llama_cpp import Llama

    llm = Llama(model_path=model_path, n_ctx=2048, n_threads=2, verbose=False)
    CACHE.mkdir(exist_ok=True)
    limit_of = {"averitec": averitec_rows, "halueval": halueval_rows, "diahalu": diahalu_rows}
    for dataset, items, words in (("averitec", averitec_items(averitec_rows), ("A", "B", "C")),
                                  ("halueval", halueval_items(halueval_rows), ("yes", "no")),
                                  ("diahalu", diahalu_items(diahalu_rows), ("yes", "no"))):
        # A longer run resumes an earlier one: rows already in the cache are not read again.
        path = CACHE / f"{name}-{dataset}.json"
        cached = json.loads(path.read_text()) if path.exists() else {"seconds": 0.0, "rows": []}
        done = {r["row"] for r in cached["rows"]}
        if limit_of[dataset] == 0:
            continue
        rows, new = list(cached["rows"]), 0
        started = time.perf_counter()
        for n, gold, task in items:
            if n in done:
                continue
            rows.append({"row": n, "gold": gold, "logprobs": next_token_logprobs(llm, wrap(task, chat), words)})
            new += 1
        seconds = cached["seconds"] + time.perf_counter() - started
        path.write_text(json.dumps({"seconds": seconds, "rows": rows}))
        print(f"{name} {dataset}: {len(rows)} items ({new} new), {seconds / max(1, len(rows)):.2f} s/item", flush=True)


def macro_f1(gold: list, pred: list, labels) -> float:
    scores = []
    for label in labels:
        tp = sum(g == label and p == label for g, p in zip(gold, pred))
        fp = sum(g != label and p == label for g, p in zip(gold, pred))
        fn = sum(g == label and p != label for g, p in zip(gold, pred))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(scores) / len(scores)


def figures(gold: list, pred: list, labels) -> str:
    """Accuracy and macro-F1 of ``pred`` against ``gold``, as every report line prints them."""
    return f"accuracy {sum(a == b for a, b in zip(gold, pred)) / len(gold):.3f} macro-F1 {macro_f1(gold, pred, labels):.3f}"


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


def fit_diahalu(name: str) -> None:
    """A dialogue is flagged when its most suspicious assistant turn's yes-minus-no margin passes the
    threshold; the threshold is chosen on the even dialogues, the figures are the odd ones."""
    path = CACHE / f"{name}-diahalu.json"
    if not path.exists():
        return
    data = json.loads(path.read_text())
    dialogues: dict[int, tuple[float, bool]] = {}
    for r in data["rows"]:
        margin = r["logprobs"][0] - r["logprobs"][1]
        best, _ = dialogues.get(r["row"], (-1e9, False))
        dialogues[r["row"]] = (max(best, margin), r["gold"]["dialogue"] == "hallucination")
    even = [v for n, v in dialogues.items() if n % 2 == 0]
    odd = [v for n, v in dialogues.items() if n % 2 == 1]

    def report(items, threshold):
        gold = [g for _, g in items]
        pred = [m >= threshold for m, _ in items]
        caught = sum(p and g for p, g in zip(pred, gold))
        return (sum(p == g for p, g in zip(pred, gold)) / len(items), macro_f1(gold, pred, (False, True)),
                caught, sum(gold))

    candidates = sorted({m for m, _ in even})
    best = max(candidates, key=lambda t: report(even, t)[1]) if candidates else 0.0
    for label, threshold in (("zero-shot (some turn yes > no)", 0.0), (f"threshold {best:.2f} fitted on even", best)):
        acc, f1, caught, total = report(odd, threshold)
        print(f"{name} diahalu odd dialogues ({len(odd)}), {label}: accuracy {acc:.3f} macro-F1 {f1:.3f}"
              f" caught {caught}/{total}")
    acc, f1, caught, total = report(odd, -1e9)
    print(f"  every dialogue flagged: accuracy {acc:.3f} macro-F1 {f1:.3f} caught {caught}/{total}")
    # A detector of fact-heavy domains would look good overall and no better than each domain's majority.
    domain = [json.loads(line)["domain"] for line in (DATA / "diahalu" / "dev-public.jsonl").open()]
    for group in sorted({domain[n] for n in dialogues}):
        items = [(m, g) for n, (m, g) in dialogues.items() if n % 2 == 1 and domain[n] == group]
        right = sum((m >= best) == g for m, g in items)
        majority = max(sum(g for _, g in items), sum(not g for _, g in items))
        print(f"  {group}: {len(items)} odd dialogues, {right} right with the fitted threshold; domain majority {majority}")
    turns = [(r["logprobs"][0] - r["logprobs"][1], r["gold"]["hallucinated"]) for r in data["rows"]]
    positives = [m for m, g in turns if g]
    negatives = [m for m, g in turns if not g]
    auc = sum((p > q) + 0.5 * (p == q) for p in positives for q in negatives) / max(1, len(positives) * len(negatives))
    print(f"  turn-level AUC (hallucinated turns vs the rest, all rows): {auc:.3f}; {data['seconds'] / len(turns):.2f} s/turn")


def fit(name: str) -> None:
    fit_diahalu(name)
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
        print(f"{name} halueval odd rows ({len(odd)} answers), {label}: {figures(gold, pred, (False, True))}")
    shipped = json.loads((RESULTS / "eval-halueval.json").read_text())
    by_key = {(p["position"], p["gold"] == "hallucination"): p for p in shipped["predictions"]}
    odd_items = [(r["row"], r["gold"]) for r in rows if r["row"] % 2 == 1]
    for key, label in (("predicted", "pipeline (calibrated)"), ("model_alone", "model alone")):
        gold = [g for _, g in odd_items]
        pred = [by_key[item][key] == "hallucination" for item in odd_items]
        print(f"  shipped Gemma 3 270M {label}, same odd answers: {figures(gold, pred, (False, True))}")
    # Its yes-minus-no margin next to the pipeline's claim-vs-passage signals, fitted on the even rows.
    width = len(shipped["predictions"][0]["whole_features"][0])
    x = np.array([[m, *np.mean(by_key[(r["row"], r["gold"])]["whole_features"] or [[0.0] * width], axis=0)[3:]]
                  for m, r in zip(margin, rows)])
    y = np.array([int(r["gold"]) for r in rows])
    parity = np.array([r["row"] % 2 for r in rows])
    x = (x - x[parity == 0].mean(axis=0)) / (x[parity == 0].std(axis=0) + 1e-6)
    gold = list(y[parity == 1].astype(bool))
    # The signals alone show what the larger model adds to them.
    for label, columns in (("the pipeline's signals alone", slice(1, None)), ("its margin + the pipeline's signals", slice(None))):
        w = softmax_fit(x[parity == 0][:, columns], y[parity == 0], 2, balanced=False)
        pred = list(softmax_predict(w, x[parity == 1][:, columns]).astype(bool))
        print(f"  logistic regression on {label} (whole answer): {figures(gold, pred, (False, True))}")
    print(f"  {halu['seconds'] / len(rows):.2f} s/answer")

    ave = json.loads((CACHE / f"{name}-averitec.json").read_text())
    x = np.array([r["logprobs"] for r in ave["rows"]])
    x = x - x.max(axis=1, keepdims=True)  # log-probs relative to the best letter
    y = np.array([AVERITEC_LABELS.index(r["gold"]) for r in ave["rows"]])
    parity = np.array([r["row"] % 2 for r in ave["rows"]])
    odd_gold = [AVERITEC_LABELS[i] for i in y[parity == 1]]
    zero = [AVERITEC_LABELS[i] for i in x[parity == 1].argmax(axis=1)]
    print(f"{name} averitec odd rows ({len(odd_gold)} claims), zero-shot letter: {figures(odd_gold, zero, AVERITEC_LABELS)}")
    for balanced in (False, True):
        w = softmax_fit(x[parity == 0], y[parity == 0], 3, balanced)
        pred = [AVERITEC_LABELS[i] for i in softmax_predict(w, x[parity == 1])]
        counts = {label: pred.count(label) for label in AVERITEC_LABELS}
        print(f"  logistic regression on the 3 log-probs, fitted on even rows ({'balanced' if balanced else 'unweighted'}):"
              f" {figures(odd_gold, pred, AVERITEC_LABELS)} predicted {counts}")
    # The shipped Gemma 3 270M pipeline on exactly these odd rows (its eval's per-row predictions).
    shipped = json.loads((RESULTS / "eval-averitec.json").read_text())
    by_row = {p["position"]: p for p in shipped["predictions"]}
    odd_rows = [r["row"] for r in ave["rows"] if r["row"] % 2 == 1]
    for key, label in (("predicted", "pipeline (calibrated)"), ("model_alone", "model alone")):
        pred = [by_row[n][key] for n in odd_rows]
        print(f"  shipped Gemma 3 270M {label}, same odd rows: {figures(odd_gold, pred, AVERITEC_LABELS)}")
    # Route (b) of the issue with the larger model: the pipeline's claim-vs-evidence signals and evidence fit
    # (the shipped 270M eval's features, less its 3 label scores) next to the larger model's letter
    # probabilities, one logistic regression fitted on the even rows.
    width = len(shipped["predictions"][0]["whole_features"][0])
    signals = np.array([np.mean(by_row[r["row"]]["whole_features"] or [[0.0] * width], axis=0)[3:] for r in ave["rows"]])
    probs = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    combined = np.hstack([probs, signals])
    scale = combined[parity == 0].std(axis=0) + 1e-6
    centre = combined[parity == 0].mean(axis=0)
    combined = (combined - centre) / scale
    for balanced, label, columns in ((False, "the pipeline's signals alone", slice(3, None)),
                                     (True, "the pipeline's signals alone", slice(3, None)),
                                     (False, "its letter probabilities + the pipeline's signals", slice(None)),
                                     (True, "its letter probabilities + the pipeline's signals", slice(None))):
        w = softmax_fit(combined[parity == 0][:, columns], y[parity == 0], 3, balanced)
        pred = [AVERITEC_LABELS[i] for i in softmax_predict(w, combined[parity == 1][:, columns])]
        counts = {label: pred.count(label) for label in AVERITEC_LABELS}
        print(f"  logistic regression on {label} ({'balanced' if balanced else 'unweighted'}):"
              f" {figures(odd_gold, pred, AVERITEC_LABELS)} predicted {counts}")
    majority = max(AVERITEC_LABELS, key=lambda label: list(y[parity == 0]).count(AVERITEC_LABELS.index(label)))
    print(f"  majority of even rows ({majority}): accuracy {odd_gold.count(majority) / len(odd_gold):.3f}")
    print(f"  {ave['seconds'] / len(ave['rows']):.2f} s/claim")


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "extract":
        chat = rest[rest.index("--chat") + 1] if "--chat" in rest else "none"
        rows = {flag: int(rest[rest.index(flag) + 1]) if flag in rest else None
                for flag in ("--halueval-rows", "--averitec-rows", "--diahalu-rows")}
        extract(rest[0], rest[1], chat, rows["--halueval-rows"], rows["--averitec-rows"], rows["--diahalu-rows"])
    elif command == "extract-pipeline":
        extract_pipeline(rest[0], rest[1], rest[rest.index("--chat") + 1] if "--chat" in rest else "none")
    elif command == "fit":
        fit(rest[0])
    else:
        raise SystemExit(f"unknown command {command!r}: use extract, extract-pipeline or fit")
