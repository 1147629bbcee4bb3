"""A linear probe on the judge's hidden state (session 38).

Every use of the judge so far reads three numbers off it: the probabilities of its letters A, B and C at the
first token of its answer. The model's last hidden state at that point (1,536 numbers for this 1.5B model) holds
more than the three letters the output layer makes of it; a probe on internal states is the usual way to read
what a model "knows" beyond what it says, and it needs no new model. This reads that state (llama.cpp's
embedding mode, pooled at the last token) for the shipped plain prompt over all passages together, once per
AVeriTeC and atomic claim of the saved judgements, and asks whether a few of its principal components, as
features beside the shipped row, judge held-out claims better:

    python docs/research/qwen-profile/hidden_probe.py read CACHE.npz docs/results/averitec-judgements.json \
        docs/results/atomic-judgements.json          # about 3 s a claim on 2 cores
    python docs/research/qwen-profile/hidden_probe.py compare CACHE.npz docs/results/averitec-judgements.json \
        docs/results/atomic-judgements.json

``compare`` fits each variant on the even rows and reads the odd ones (each row's whole claim, without the rest of
the pipeline), then over 60 random halves of AVeriTeC's rows, as sessions 34 to 37 did (other halves than
per_passage.py's: numpy's generator, seed 1). The principal components are fitted on the fitting rows of each split
only (never on the rows read), so the held-out rows stay unseen. ``--only TEXT`` runs the variants whose name holds
TEXT (``--only =NAME``: that one), beside the shipped row; with the AVeriTeC file alone every fit is AVeriTeC's alone.

Result (results-hidden-probe.txt; README, session 38): the gain over the halves grows with k (0.614 -> 0.648 with
32 components) and costs atomic claims, and a control with no hidden state, one bit saying which set a row comes
from, buys as much (0.656): the fit learns AVeriTeC's own label mix apart from the atomic rows'. Beside that bit the
hidden state adds 0.014 over the halves (none on the issue's split), and in fits on AVeriTeC's rows alone 0.042, but
those leave out the atomic rows the demo's planted value swaps need. Not shipped.

Closed-book (``read-closed``, ``closed-book``): the same probe as a detector of statements the model takes for
false. Each claim of the saved HaluEval, AVeriTeC and DiaHalu judgements is read alone (no evidence) in a prompt of
its own asking whether it is true; a probe fitted on HaluEval's and AVeriTeC's even rows only (claims of right
answers and true claims against those of hallucinated answers and false claims) reads their odd rows and DiaHalu,
which it never saw, dialogue by dialogue (its most suspect claim):

    python docs/research/qwen-profile/hidden_probe.py read-closed CLOSED.npz docs/results/halueval-judgements.json \
        docs/results/averitec-judgements.json docs/results/diahalu-judgements.json     # 1 to 2.5 s a claim
    python docs/research/qwen-profile/hidden_probe.py closed-book CLOSED.npz docs/results/halueval-judgements.json \
        docs/results/averitec-judgements.json docs/results/diahalu-judgements.json ../shared/data/diahalu/dev-public.jsonl

Result (results-hidden-closed-book.txt): HaluEval's odd claims 0.84 to 0.87 without their passage, AVeriTeC's AUC
about 0.61, DiaHalu's dialogues AUC 0.45 to 0.56: what DiaHalu's bots get wrong is not in this model's weights.
"""

from __future__ import annotations

import functools
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from per_passage import LABEL_NAMES, Rows, rows_of, scored

from agents.evaluation.harness import load_judgements
from agents.evaluation.metrics import classification_metrics
from agents.model import llama_adapter
from agents.model.judge import judge_prompt, judge_templates, packaged_model
from agents.scoring.calibration import VerifyCalibration, cross_validated_fit, fit
from agents.stages.verify import claim_as_read, judge_inputs, judge_reads
from schemas import Label
from stream.settings import Settings


def case_key(dataset: str, case_id: str) -> str:
    return f"{dataset}/{case_id}"


def hidden_reader(threads: int):
    """The judge's GGUF in embedding mode: the final hidden state at a prompt's last token."""
    from llama_cpp import LLAMA_POOLING_TYPE_LAST, Llama

    llama_adapter.silence_log()
    path = packaged_model(Settings.from_env().model.cache_dir)
    with llama_adapter.loading_without_amx():
        llm = Llama(model_path=str(path), n_ctx=4096, n_batch=4096, n_ubatch=4096, n_threads=threads,
                    embedding=True, pooling_type=LLAMA_POOLING_TYPE_LAST, verbose=False)
    # Llama.embed tokenizes without special tokens; the judge's prompt is written in its chat tokens.
    llm.tokenize = functools.partial(llm.tokenize, special=True)
    return lambda text: np.asarray(llm.embed(text, normalize=False), dtype=np.float32)


def read(cache_path: Path, paths: Sequence[Path]) -> None:
    cache = dict(np.load(cache_path)) if cache_path.exists() else {}
    plain = judge_templates()[0]
    embed = hidden_reader(Settings.from_env().model.n_threads)
    for path in paths:
        run = load_judgements(path)
        todo = [c for c in run.cases if case_key(run.dataset, c.case_id) not in cache
                and judge_reads(c.whole[0].evidence)]
        print(f"{path}: {len(todo)} claims to read", flush=True)
        started = time.monotonic()
        for n, case in enumerate(todo, 1):
            claims, passages = judge_inputs(case.whole[0].evidence)
            prompt = judge_prompt(plain, claims[0], passages)
            cache[case_key(run.dataset, case.case_id)] = embed(prompt.static + prompt.variable)
            if n % 20 == 0 or n == len(todo):
                np.savez(cache_path, **cache)
                print(f"  {n}/{len(todo)} ({(time.monotonic() - started) / n:.1f} s a claim)", flush=True)


class Probe:
    """Principal components of the hidden states of the fitting rows, and the projection of any row on them."""

    def __init__(self, vectors: np.ndarray, k: int) -> None:
        self.mean = vectors.mean(axis=0)
        _, _, vt = np.linalg.svd(vectors - self.mean, full_matrices=False)
        self.axes = vt[:k]

    def __call__(self, vector: np.ndarray) -> tuple[float, ...]:
        return tuple(float(v) for v in self.axes @ (vector - self.mean))


Half = list[tuple[tuple[float, ...], object, np.ndarray, str]]  # shipped row, label, hidden state, data set


def rows_with_hidden(run, cache: dict[str, np.ndarray], odd: bool) -> Half:
    """One half's whole claims: the judge's calibration row as shipped (per-passage letters as saved), the label,
    the cached hidden state and the set."""
    half = []
    for case in run.cases:
        if case.position % 2 == odd:
            [(row, label)] = rows_of(run.dataset, case, {})
            half.append((tuple(row), label, cache[case_key(run.dataset, case.case_id)], run.dataset))
    return half


Transform = Callable[[Half], Rows]  # a fitted variant's way from (row, label, hidden state) to the fit's rows


def fitted_with(train: Half, transform: Transform, name: str) -> tuple[VerifyCalibration, Transform]:
    rows = transform(train)
    return cross_validated_fit([x for x, _ in rows], [y for _, y in rows], source=name), transform


def pca(k: int, set_named: bool = False) -> Callable[[Half, str], tuple[VerifyCalibration, Transform]]:
    """The shipped row, then (``set_named``) one bit saying whether the row is AVeriTeC's, then the projections on
    the fitting rows' first ``k`` principal components (none for k = 0).

    The bit is a control: a hidden state tells AVeriTeC's prompts from the constructed atomic ones at a glance, so
    a gain from it may be no more than each set's own label mix learned apart; the bit alone shows what that is
    worth, and beside it the components show what the hidden state adds."""
    def build(train: Half, name: str) -> tuple[VerifyCalibration, Transform]:
        probe = Probe(np.stack([h for _, _, h, _ in train]), k) if k else (lambda h: ())
        bit = (lambda s: (float(s == "averitec"),)) if set_named else (lambda s: ())
        return fitted_with(train, lambda part: [(row + bit(s) + probe(h), label) for row, label, h, s in part], name)
    return build


shipped_only = pca(0)


def cv_log_loss(fitted: VerifyCalibration) -> float:
    return float(re.search(r"log-loss ([0-9.]+)", fitted.source).group(1))


def pca_chosen(train: Half, name: str) -> tuple[VerifyCalibration, Transform]:
    """:func:`pca` with ``k`` chosen by the fitting rows' cross-validated log-loss (nested: no row read sees it)."""
    return min((pca(k)(train, f"{name}: k {k}") for k in CHOICES), key=lambda built: cv_log_loss(built[0]))


def stacked(k: int) -> Callable[[Half, str], tuple[VerifyCalibration, Transform]]:
    """The shipped row plus three letters of a probe of its own (PCA ``k``, then a logistic fit on the hidden state
    alone); the fitting rows get the probe's out-of-fold letters, so the calibration learns how far to trust it."""
    def probe_fit(part: Half) -> Callable[[np.ndarray], tuple[float, ...]]:
        probe = Probe(np.stack([h for _, _, h, _ in part]), k)
        letters = fit([probe(h) for _, _, h, _ in part], [label for _, label, _, _ in part], l2=0.1)
        def read_with(h: np.ndarray) -> tuple[float, ...]:
            scores = letters.combine(probe(h))
            return scores.true, scores.false, scores.unverifiable
        return read_with

    def build(train: Half, name: str) -> tuple[VerifyCalibration, Transform]:
        out_of_fold = [None] * len(train)
        for fold in range(FOLDS):
            read_with = probe_fit([r for i, r in enumerate(train) if i % FOLDS != fold])
            for i in range(fold, len(train), FOLDS):
                out_of_fold[i] = read_with(train[i][2])
        rows = [(row + extra, label) for (row, label, _, _), extra in zip(train, out_of_fold)]
        read_with = probe_fit(train)
        fitted = cross_validated_fit([x for x, _ in rows], [y for _, y in rows], source=name)
        return fitted, lambda part: [(row + read_with(h), label) for row, label, h, _ in part]
    return build


FOLDS = 5
CHOICES = (4, 8, 16, 32, 64)
VARIANTS: dict[str, Callable[[Half, str], tuple[VerifyCalibration, Transform]]] = {
    "shipped row alone": shipped_only, "+ which set the row is from (control)": pca(0, set_named=True),
    **{f"+ hidden PCA {k}": pca(k) for k in CHOICES},
    "+ hidden PCA, k chosen by CV on the fitting rows": pca_chosen,
    "+ a probe's out-of-fold letters (PCA 32)": stacked(32),
    **{f"+ which set + hidden PCA {k}": pca(k, set_named=True) for k in (32, 64)},
}


def compare(cache_path: Path, paths: Sequence[Path], repeats: int = 60, only: str = "") -> None:
    """Each variant (those whose name holds ``only``, and the shipped row) on the odd rows, then over the halves."""
    variants = {name: build for name, build in VARIANTS.items()
                if (name == only[1:] if only.startswith("=") else only in name) or build is shipped_only}
    cache = dict(np.load(cache_path))
    runs = [load_judgements(p) for p in paths]
    halves = {run.dataset: (rows_with_hidden(run, cache, False), rows_with_hidden(run, cache, True)) for run in runs}
    first = runs[0].dataset
    fixed = [row for run in runs[1:] for row in halves[run.dataset][0]]
    kept = [row for run in runs[1:] for row in halves[run.dataset][1]]
    print("even rows -> odd rows (whole claims, without the rest of the pipeline)")
    base_right: list[bool] = []
    for name, build in variants.items():
        fitted, transform = build(halves[first][0] + fixed, name)
        odd = transform(halves[first][1])
        predicted = [fitted.combine(x).best() for x, _ in odd]
        right = [p is y for p, (_, y) in zip(predicted, odd)]
        base_right = base_right or right
        f1 = classification_metrics([y.value for _, y in odd], [p.value for p in predicted], LABEL_NAMES).macro_f1
        print(f"  {fitted.source}\n    {first} odd: accuracy {sum(right) / len(right):.3f}, macro-F1 {f1:.3f}, log-loss"
              f" {scored(fitted, odd)[2]:.3f}; right only with it {sum(a and not b for a, b in zip(right, base_right))},"
              f" only with the shipped row {sum(b and not a for a, b in zip(right, base_right))};"
              f" other files' odd rows accuracy {scored(fitted, transform(kept))[0] if kept else float('nan'):.3f}", flush=True)
    rows = halves[first][0] + halves[first][1]
    print(f"{repeats} random halves of {first}'s {len(rows)} rows (fit: one half + the other files' even rows)")
    accuracies: dict[str, list[float]] = {}
    for name, build in variants.items():
        rng = np.random.default_rng(1)
        results = []
        for _ in range(repeats):
            order = rng.permutation(len(rows))
            train = [rows[i] for i in order[: len(rows) // 2]]
            fitted, transform = build(train + fixed, name)
            results.append(scored(fitted, transform([rows[i] for i in order[len(rows) // 2:]]))
                           + (scored(fitted, transform(kept))[0] if kept else float("nan"),))
        accuracies[name] = [r[0] for r in results]
        print(f"  {name}: other half accuracy {np.mean(accuracies[name]):.3f} ({min(accuracies[name]):.2f} to"
              f" {max(accuracies[name]):.2f}), macro-F1 {np.mean([r[1] for r in results]):.3f}, log-loss"
              f" {np.mean([r[2] for r in results]):.3f}; other files' odd rows {np.mean([r[3] for r in results]):.3f}",
              flush=True)
    names = list(accuracies)
    for i, name in enumerate(names):
        for other in names[:i]:  # every variant against each one before it, split by split
            gains = np.array(accuracies[name]) - np.array(accuracies[other])
            print(f"  {name} against {other}: mean {gains.mean():+.3f}, more accurate in {(gains > 0).sum()},"
                  f" less in {(gains < 0).sum()} of {repeats}")


CLOSED_BOOK_PROMPT = (
    "<|im_start|>system\nYou check facts. Answer with one letter only.<|im_end|>\n"
    "<|im_start|>user\nStatement: {claim}\n\nIs this statement true?\nA) true\nB) false\n"
    "Reply with the letter.<|im_end|>\n<|im_start|>assistant\n"
)


def claims_of(run) -> list[tuple[str, str, str]]:
    """(case id, turn id, claim as read) for every claim of the file's segmented turns."""
    return [(case.case_id, turn.evidence.claimset.turn_id, claim_as_read(claim))
            for case in run.cases for turn in case.judged for claim in turn.evidence.claimset.claims]


def read_closed(cache_path: Path, paths: Sequence[Path]) -> None:
    cache = dict(np.load(cache_path)) if cache_path.exists() else {}
    embed = hidden_reader(Settings.from_env().model.n_threads)
    for path in paths:
        run = load_judgements(path)
        claims = ({claim for _, _, claim in claims_of(run)}
                  | {claim for odd in (False, True) for claim, _ in labelled_claims(run, odd)})
        todo = sorted(claims - set(cache))
        print(f"{path}: {len(todo)} claims to read", flush=True)
        started = time.monotonic()
        for n, claim in enumerate(todo, 1):
            cache[claim] = embed(CLOSED_BOOK_PROMPT.format(claim=claim))
            if n % 50 == 0 or n == len(todo):
                np.savez(cache_path, **cache)
                print(f"  {n}/{len(todo)} ({(time.monotonic() - started) / n:.2f} s a claim)", flush=True)


def labelled_claims(run, odd: bool) -> list[tuple[str, Label]]:
    """Claims of one half with a true/false label: HaluEval's by its turn's label, AVeriTeC's whole claims."""
    out = []
    for case in run.cases:
        if case.position % 2 != odd:
            continue
        if run.dataset == "averitec":
            if case.gold in ("true", "false"):
                out.append((claim_as_read(case.whole[0].evidence.claimset.claims[0]), Label(case.gold)))
        else:
            label = Label.FALSE if case.gold == "hallucination" else Label.TRUE
            out += [(claim_as_read(c), label) for t in case.judged for c in t.evidence.claimset.claims]
    return out


def closed_book(cache_path: Path, paths: Sequence[Path], diahalu_data: Path) -> None:
    from agents.evaluation.datasets import read_diahalu
    from agents.evaluation.metrics import roc_area

    cache = dict(np.load(cache_path))
    *training, diahalu = [load_judgements(p) for p in paths]
    marked = {c.case_id: set(c.hallucinated_turns) for c in read_diahalu(diahalu_data)}
    train = [pair for run in training for pair in labelled_claims(run, odd=False)]
    for k in (8, 16, 32, 64):
        probe = Probe(np.stack([cache[c] for c, _ in train]), k)
        fitted = cross_validated_fit([probe(cache[c]) for c, _ in train], [y for _, y in train],
                                     source=f"hidden PCA {k}, {len(train)} even claims")
        print(fitted.source)

        def p_false(claim: str) -> float:
            return fitted.combine(probe(cache[claim])).false

        for run in training:
            odd = labelled_claims(run, odd=True)
            right = sum((p_false(c) > 0.5) == (y is Label.FALSE) for c, y in odd)
            auc = roc_area([p_false(c) for c, y in odd if y is Label.FALSE], [p_false(c) for c, y in odd if y is Label.TRUE])
            print(f"  {run.dataset} odd claims ({len(odd)}): accuracy {right / len(odd):.3f}, AUC false vs true {auc:.3f}")
        # DiaHalu, never fitted on: claims of marked turns against the rest, and dialogues by their most suspect claim.
        scored_claims = [(case_id, turn_id in marked[case_id], p_false(claim)) for case_id, turn_id, claim in claims_of(diahalu)]
        print(f"  diahalu claims ({len(scored_claims)}): AUC marked turns vs the rest "
              f"{roc_area([p for _, m, p in scored_claims if m], [p for _, m, p in scored_claims if not m]):.3f}")
        worst: dict[str, float] = {}
        for case_id, _, p in scored_claims:
            worst[case_id] = max(worst.get(case_id, 0.0), p)
        gold = {c.case_id: c.gold == "hallucination" for c in diahalu.cases}
        position = {c.case_id: c.position for c in diahalu.cases}
        for half, name in ((None, "all"), (0, "even"), (1, "odd")):
            ids = [i for i in gold if half is None or position[i] % 2 == half]
            print(f"  diahalu dialogues, {name} ({len(ids)}): AUC by the most suspect claim "
                  f"{roc_area([worst.get(i, 0.0) for i in ids if gold[i]], [worst.get(i, 0.0) for i in ids if not gold[i]]):.3f}")
        # A threshold chosen on the even dialogues (best macro-F1), read on the odd ones.
        even = [i for i in gold if position[i] % 2 == 0]
        odd_ids = [i for i in gold if position[i] % 2 == 1]

        def f1_at(ids: list[str], cut: float) -> float:
            predicted = ["hallucination" if worst.get(i, 0.0) > cut else "factual" for i in ids]
            return classification_metrics(["hallucination" if gold[i] else "factual" for i in ids], predicted,
                                          ["factual", "hallucination"]).macro_f1

        cut = max(sorted({worst.get(i, 0.0) for i in even}), key=lambda c: f1_at(even, c))
        caught = sum(worst.get(i, 0.0) > cut and gold[i] for i in odd_ids)
        flagged = sum(worst.get(i, 0.0) > cut and not gold[i] for i in odd_ids)
        print(f"  diahalu odd dialogues at the even rows' cut {cut:.3f}: macro-F1 {f1_at(odd_ids, cut):.3f}, caught"
              f" {caught} of {sum(gold[i] for i in odd_ids)}, factual flagged {flagged} of"
              f" {sum(not gold[i] for i in odd_ids)}", flush=True)


if __name__ == "__main__":
    command, cache_file, *files = sys.argv[1:]
    if command == "read":
        read(Path(cache_file), [Path(f) for f in files])
    elif command == "compare":  # --only TEXT: the variants whose name holds TEXT
        only = files[files.index("--only") + 1] if "--only" in files else ""
        compare(Path(cache_file), [Path(f) for f in files if f.endswith(".json")], only=only)
    elif command == "read-closed":
        read_closed(Path(cache_file), [Path(f) for f in files])
    elif command == "closed-book":
        closed_book(Path(cache_file), [Path(f) for f in files[:-1]], Path(files[-1]))
