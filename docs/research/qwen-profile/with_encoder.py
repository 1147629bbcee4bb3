"""Qwen 1.5B's letter probabilities in the shipped retrieved-evidence fit, now that it has the cross-encoder.

Research for issue #13 (session 28). `score.py fit` put the larger model's three letter probabilities beside
the pipeline's other features in its own small regression. This script asks the question the way halluwatch
would ship it: the shipped fitting procedure (`agents.scoring.calibration.cross_validated_fit`: class-balanced
multinomial logistic regression, L2 chosen by 5-fold cross-validated log-loss on the even rows), scored once
on the odd rows. Each claim is decided on its unsegmented features (the saved judgements' `whole` turn; 187
of AVeriTeC's 200 claims are one claim when segmented), without the value-swap rule, so the "shipped
features" lines sit near, not at, the pipeline's own figure (0.480 / 0.446 on the odd claims).

    python docs/research/qwen-profile/with_encoder.py

Qwen's letters come from one of two prompts (`score.py`): `extract` asks about AVeriTeC's own
question/answer pairs, introduced as a fact-checker's questions; `extract-pipeline` asks about the passages
exactly as the eval harness hands them to the verifier, with no word about their shape, as a shipped profile
would. Variants (fixed before the odd rows were looked at; the first of each block is the profile a user would
select):
  qwen judges:   Qwen's 3 letter probabilities in place of Gemma's 3 label scores, every other feature kept
  both judge:    Gemma's 3 label scores and Qwen's 3 letter probabilities
  shipped:       the 20 shipped features (Gemma's label scores), same fit, same rows
"""

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agents.evaluation.harness import load_judgements, whole_features
from agents.evaluation.metrics import classification_metrics
from agents.scoring.calibration import cross_validated_fit
from schemas import Label

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parents[1] / "results"
LABELS = ("true", "false", "unverifiable")
Row = tuple[int, str, np.ndarray, np.ndarray]  # position, gold label, shipped features, Qwen's letter probabilities
VARIANTS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "qwen judges (Qwen's letters for Gemma's)": lambda f, q: np.concatenate([q, f[3:]]),
    "both judge (Gemma's and Qwen's)": lambda f, q: np.concatenate([f, q]),
    "shipped features": lambda f, q: f,
}


def macro_f1(gold: list[str], pred: list[str]) -> float:
    return classification_metrics(gold, pred, LABELS).macro_f1


def letter_probabilities(cache: str) -> dict[int, np.ndarray] | None:
    """Each cached row's three letter probabilities (renormalised over the three); None without the cache."""
    path = HERE / "cache" / cache
    if not path.exists():
        return None
    probabilities = {}
    for r in json.loads(path.read_text())["rows"]:
        logprobs = np.array(r["logprobs"])
        probs = np.exp(logprobs - logprobs.max())
        probabilities[r["row"]] = probs / probs.sum()
    return probabilities


def rows_of(judgements: str, cache: str, second_cache: str | None = None) -> list[Row] | None:
    """One row per judged case that Qwen has read; None when a cache is not there. With ``second_cache``, the
    two prompts' probabilities averaged (session 31: the plain prompt and the one with worked examples)."""
    letters = letter_probabilities(cache)
    second = letter_probabilities(second_cache) if second_cache else letters
    if letters is None or second is None:
        return None
    rows = []
    for case in load_judgements(RESULTS / judgements).cases:
        if case.position in letters and case.position in second and case.whole:
            probs = (letters[case.position] + second[case.position]) / 2
            rows.append((case.position, case.gold, np.array(whole_features(case)[0]), probs))
    return rows


def report(title: str, fitting: list[Row], scored: dict[str, list[Row]]) -> None:
    print(f"{title}: {len(fitting)} even rows fit; odd rows scored: "
          + ", ".join(f"{name} {len(rows)}" for name, rows in scored.items()))
    right: dict[str, list[bool]] = {}
    for variant, build in VARIANTS.items():
        calibration = cross_validated_fit([tuple(build(f, q)) for _, _, f, q in fitting],
                                          [Label(g) for _, g, _, _ in fitting], source=variant)
        print(f"  {variant}: {calibration.source.split('; ')[1]}")
        for name, rows in scored.items():
            gold = [g for _, g, _, _ in rows]
            pred = [calibration.combine(tuple(build(f, q))).best().value for _, _, f, q in rows]
            right[f"{variant} {name}"] = [g == p for g, p in zip(gold, pred)]
            flagged = sum(g == "true" and p == "false" for g, p in zip(gold, pred))
            print(f"    {name:9s} accuracy {sum(right[f'{variant} {name}']) / len(rows):.3f}"
                  f" macro-F1 {macro_f1(gold, pred):.3f}  true called false {flagged} of {gold.count('true')}"
                  f"  predicted {dict((label, pred.count(label)) for label in LABELS)}")
    # Paired on the same odd AVeriTeC claims: the first variant against the shipped features (exact McNemar).
    first, last = right[f"{next(iter(VARIANTS))} averitec"], right["shipped features averitec"]
    gains, losses = sum(a and not b for a, b in zip(first, last)), sum(b and not a for a, b in zip(first, last))
    tail = sum(math.comb(gains + losses, k) for k in range(min(gains, losses) + 1)) / 2 ** (gains + losses)
    print(f"  averitec, qwen judges vs shipped features: right only with Qwen {gains}, only without {losses},"
          f" two-sided exact p {min(1.0, 2 * tail):.3f}")


def main() -> None:
    plain, examples = "qwen-coder-1.5b-pipeline", "qwen-coder-1.5b-fewshot"
    for prompt, averitec_cache, atomic_cache, second in (
        ("AVeriTeC-shaped prompt (score.py extract)", "qwen-coder-1.5b-averitec.json", None, None),
        ("pipeline's passages (score.py extract-pipeline)", f"{plain}-averitec.json", f"{plain}-atomic.json", None),
        ("pipeline's passages after six worked examples (few_shot.py)", f"{examples}-averitec.json",
         f"{examples}-atomic.json", None),
        ("the two readings above averaged (shipped since session 31)", f"{plain}-averitec.json", f"{plain}-atomic.json",
         examples),
    ):
        averitec = rows_of("averitec-judgements.json", averitec_cache, second and f"{second}-averitec.json")
        if averitec is None:
            print(f"{prompt}: no cache, run score.py first")
            continue
        even, odd = [r for r in averitec if r[0] % 2 == 0], [r for r in averitec if r[0] % 2]
        majority = max(LABELS, key=[g for _, g, _, _ in even].count)
        print(f"\n== {prompt}; majority of even rows ({majority}) on the odd ones: "
              f"{sum(g == majority for _, g, _, _ in odd) / len(odd):.3f}")
        report("AVeriTeC even claims alone", even, {"averitec": odd})
        atomic = rows_of("atomic-judgements.json", atomic_cache, second and f"{second}-atomic.json") if atomic_cache else None
        if atomic:
            report("AVeriTeC and atomic even rows (the shipped fit's rows)",
                   even + [r for r in atomic if r[0] % 2 == 0],
                   {"averitec": odd, "atomic": [r for r in atomic if r[0] % 2]})


if __name__ == "__main__":
    main()
