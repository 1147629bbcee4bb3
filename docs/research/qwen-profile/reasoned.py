"""The judge writing a sentence or two of reasoning before its letter (session 34).

The shipped judge answers with its letter at once: one forward pass, no generation. AVeriTeC's evidence is
question-and-answer records that often settle a claim only in a step ("Did X say Y? No, he said Z."), which a
small model may get right more often when it first says what the records say. This asks the judge's model
(Qwen2.5-Coder-1.5B, the packaged GGUF) once per whole claim, greedily, to write up to REASON_TOKENS tokens
on what the evidence says about the claim and then "Answer:"; the three letters' probabilities are read at the
token after "Answer:". The letters and the reasoning are kept in a cache file, so a later run reads only what
it has not read yet:

    python docs/research/qwen-profile/reasoned.py read CACHE.json docs/results/averitec-judgements.json
    python docs/research/qwen-profile/reasoned.py compare CACHE.json docs/results/averitec-judgements.json \
        [docs/results/atomic-judgements.json]

``compare`` prints, over the even rows, how well each reading's letters tell each label's claims from the rest
(AUC), then 5-fold cross-validated fits on the even rows that differ only in what stands for the judge (the
shipped reading, the reasoned one, both averaged) or that add the reasoned letters as features, and each such
fit's reading of the odd rows (whole claims, without the rest of the pipeline) with a paired count against
the shipped row. ``splits`` repeats the comparison over random halves of the first file's rows:

    python docs/research/qwen-profile/reasoned.py splits CACHE.json docs/results/averitec-judgements.json \
        [docs/results/atomic-judgements.json]
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from agents.evaluation.harness import CaseResult, fitting_rows, load_judgements
from agents.evaluation.metrics import roc_area
from agents.model import llama_adapter
from agents.model.judge import EVIDENCE_CHARS, LETTERS, packaged_model
from agents.stages.verify import judge_inputs, judge_reads
from schemas import Label, LabelScores
from stream.settings import Settings

sys.path.insert(0, str(Path(__file__).parent))
from per_passage import compare_over_halves, paired_held_out  # noqa: E402

REASON_TOKENS = 96  # a sentence or two; the model rarely needs more before "Answer:"

PROMPT = """<|im_start|>system
You check facts against evidence. Think in one or two short sentences, then answer.<|im_end|>
<|im_start|>user
Evidence:
{evidence}

Claim: {claim}

Using only the evidence above, is the claim
A) supported
B) refuted
C) not decided by the evidence
First say in one or two short sentences what the evidence says about the claim's main point. Then write "Answer:" and the letter.<|im_end|>
<|im_start|>assistant
"""


def whole_claim(case: CaseResult) -> tuple[str, list[str]] | None:
    """The case's whole claim as the judge reads it and its passages, or None where the judge reads nothing."""
    if not case.whole or not judge_reads(case.whole[0].evidence):
        return None
    claims, passages = judge_inputs(case.whole[0].evidence)
    return claims[0], passages


def key(claim: str, passages: list[str]) -> str:
    return json.dumps([claim, passages])


class Reasoner:
    def __init__(self, path: Path, threads: int) -> None:
        from llama_cpp import Llama

        llama_adapter.silence_log()
        with llama_adapter.loading_without_amx():
            self.llm = Llama(model_path=str(path), n_ctx=4096, n_threads=threads, use_mmap=False, verbose=False)
        self.ids = [{t[0] for t in (self.llm.tokenize(s.encode(), add_bos=False, special=False)
                                    for s in (letter, " " + letter)) if len(t) == 1} for letter in LETTERS]

    def read(self, claim: str, passages: list[str]) -> tuple[list[float], str]:
        llm = self.llm
        evidence = "\n".join(f"- {text}" for text in passages)[:EVIDENCE_CHARS] or "(none)"
        prompt = llm.tokenize(PROMPT.format(evidence=evidence, claim=claim).encode(), add_bos=True, special=True)
        llama_adapter.rewind(llm, 0)
        llm.eval(prompt)
        generated: list[int] = []
        text = ""
        for _ in range(REASON_TOKENS):
            token = int(np.argmax(llama_adapter.logits_row(llm, -1)))
            if llama_adapter.is_end_of_generation(llm, token):
                break
            generated.append(token)
            llm.eval([token])
            text = llm.detokenize(generated).decode("utf-8", errors="replace")
            if "Answer" in text:
                break
        reasoning = text.split("Answer")[0].rstrip()
        # Whatever the model wrote after its reasoning, the letter is read right after "Answer:".
        full = prompt + llm.tokenize((reasoning + "\nAnswer:").encode(), add_bos=False, special=False)
        held = prompt + generated
        common = next((i for i, (a, b) in enumerate(zip(full, held)) if a != b), min(len(full), len(held)))
        common = min(common, len(full) - 1)  # at least the last token is read again for its logits
        llama_adapter.rewind(llm, common)
        llm.eval(full[common:])
        logits = np.asarray(llama_adapter.logits_row(llm, -1), dtype=np.float64)
        logprobs = logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
        letters = [float(max(logprobs[i] for i in ids)) for ids in self.ids]
        top = max(letters)
        weights = [np.exp(v - top) for v in letters]
        return [float(w / sum(weights)) for w in weights], reasoning


def unread(cache: dict, paths: list[Path], claim_of=whole_claim) -> dict[str, tuple[str, list[str]]]:
    """The whole claims of these saved judgements (``claim_of`` a case, None where the judge reads nothing) that
    ``cache`` lacks, by cache key, once each. Shared with qa_records.py and settles.py."""
    todo = {}
    for path in paths:
        for case in load_judgements(path).cases:
            item = claim_of(case)
            if item is not None and key(*item) not in cache:
                todo[key(*item)] = item
    print(f"{len(todo)} claims to read", flush=True)
    return todo


def read(cache_path: Path, path: Path) -> None:
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    todo = unread(cache, [path])
    settings = Settings.from_env()
    reasoner = Reasoner(packaged_model(settings.model.cache_dir), settings.model.n_threads)
    start = time.monotonic()
    for n, (k, (claim, passages)) in enumerate(todo.items(), 1):
        letters, reasoning = reasoner.read(claim, passages)
        cache[k] = {"letters": letters, "reasoning": reasoning}
        if n % 10 == 0 or n == len(todo):
            cache_path.write_text(json.dumps(cache, indent=0))
            print(f"{n}/{len(todo)}, {(time.monotonic() - start) / n:.1f} s a claim", flush=True)


def reasoned_scores(case: CaseResult, cache: dict) -> LabelScores | None:
    item = whole_claim(case)
    if item is None:
        return None
    return LabelScores(*cache[key(*item)]["letters"])


def averaged(a: LabelScores, b: LabelScores) -> LabelScores:
    return LabelScores((a.true + b.true) / 2, (a.false + b.false) / 2, (a.unverifiable + b.unverifiable) / 2)


def whole_row(dataset: str, case: CaseResult, judge: LabelScores | None) -> tuple[tuple[float, ...], Label]:
    """The case's fitting row for its whole claim, with ``judge`` in place of the shipped reading if given."""
    turn = case.whole[0]
    if judge is not None:
        [j] = turn.judgements
        turn = dataclasses.replace(turn, judgements=(dataclasses.replace(j, fit=dataclasses.replace(j.fit, judge=judge)),))
    [(row, label)] = fitting_rows(dataset, dataclasses.replace(case, judged=[], whole=[turn]), "qwen-1.5b")
    return tuple(row), label


def variant_rows(run, cache: dict, variant: str, odd: bool) -> tuple[list[tuple[float, ...]], list[Label]]:
    rows, labels = [], []
    for case in run.cases:
        if case.position % 2 != odd or whole_claim(case) is None:
            continue
        reasoned = reasoned_scores(case, cache)
        shipped = case.whole[0].judgements[0].fit.judge
        judge = {"shipped": None, "reasoned": reasoned, "averaged": averaged(shipped, reasoned),
                 "shipped + reasoned letters": None}[variant]
        row, label = whole_row(run.dataset, case, judge)
        if variant == "shipped + reasoned letters":
            row = row + (reasoned.true, reasoned.false, reasoned.unverifiable)
        rows.append(row)
        labels.append(label)
    return rows, labels


VARIANTS = ("shipped", "reasoned", "averaged", "shipped + reasoned letters")


def compare(cache_path: Path, paths: list[Path]) -> None:
    """Fits on the even rows of these files together; each file's odd rows read apart, paired with the shipped row."""
    cache = json.loads(cache_path.read_text())
    runs = [load_judgements(path) for path in paths]
    for run in runs:
        even = [c for c in run.cases if c.position % 2 == 0 and whole_claim(c) is not None]
        for name, pick in (("shipped", lambda c: c.whole[0].judgements[0].fit.judge),
                           ("reasoned", lambda c: reasoned_scores(c, cache))):
            letters = [(Label(c.gold), pick(c)) for c in even]
            print(f"{run.dataset} even rows, AUC of the {name} letters: " + ", ".join(
                f"{label.value} {roc_area([s.of(label) for g, s in letters if g is label], [s.of(label) for g, s in letters if g is not label]):.3f}"
                for label in Label if any(g is label for g, _ in letters)))
    paired_held_out(runs, {variant: (lambda run, odd, variant=variant: variant_rows(run, cache, variant, odd))
                           for variant in VARIANTS})


def splits(cache_path: Path, paths: list[Path], repeats: int = 20) -> None:
    """Shipped row against shipped row + reasoned letters over random halves of the first file's rows
    (per_passage.compare_over_halves). One even/odd split of 100 claims moves by several claims on its own."""
    cache = json.loads(cache_path.read_text())
    first, *others = [load_judgements(path) for path in paths]

    def rows(runs, variant: str, halves: tuple[bool, ...]) -> list[tuple[tuple[float, ...], Label]]:
        return [row for run in runs for odd in halves for row in zip(*variant_rows(run, cache, variant, odd))]

    variants = {variant: (rows([first], variant, (False, True)), rows(others, variant, (False,)),
                          rows(others, variant, (True,)))
                for variant in ("shipped", "shipped + reasoned letters")}
    compare_over_halves(variants, first.dataset, repeats, seed=0)


if __name__ == "__main__":
    command, cache_file, *judgements = sys.argv[1:]
    if command == "read":
        for judgement_file in judgements:
            read(Path(cache_file), Path(judgement_file))
    elif command == "compare":
        compare(Path(cache_file), [Path(f) for f in judgements])
    elif command == "splits":
        splits(Path(cache_file), [Path(f) for f in judgements])
