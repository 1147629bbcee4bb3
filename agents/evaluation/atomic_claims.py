"""Atomic claims with known labels, made from AVeriTeC's own answers.

AVeriTeC's claims are long real-world statements judged against question/answer
pairs; a chatbot's claims, once segmented, are short single facts judged
against declarative passages. A calibration fitted on AVeriTeC alone learns
that a name or number missing from the evidence says little (true and false
claims both have them there), which is wrong for atomic claims. This module
derives a second labelled set from the same file, in the way fact-checking
datasets mutate sentences into claims:

* true: an answer sentence, judged against its own row's evidence;
* false: the same sentence with one number changed or one name replaced by a
  name from another row's answer, against the same evidence;
* unverifiable: another row's answer sentence, against this row's evidence.

Rows take the three kinds in turn (row i gets kind i mod 3), so the set is
balanced and every row is used once; everything is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from agents.evaluation.datasets import ClaimCase, read_averitec
from agents.inputs import read_jsonl
from agents.text import names, numbers, sentences, words
from schemas import Label

MIN_WORDS, MAX_WORDS = 6, 40
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")


@dataclass(frozen=True)
class AnswerSentence:
    row: int  # index of the AVeriTeC case
    text: str


def answer_sentence(evidence: Sequence[dict[str, object]]) -> str | None:
    """The first declarative answer sentence of a row that states a name or a number."""
    for item in evidence:
        if item.get("answer_type") not in ("Extractive", "Abstractive"):
            continue
        for sentence in sentences(" ".join(str(item.get("answer") or "").split())):
            count = len(words(sentence))
            # A claim reads as a sentence: it starts with a capital and is not a question or a fragment.
            if not sentence[:1].isupper() or sentence.endswith("?") or not MIN_WORDS <= count <= MAX_WORDS:
                continue
            if names(sentence) or numbers(sentence):
                return sentence if sentence.endswith((".", "!")) else sentence + "."
    return None


def changed_number(sentence: str, seed: int) -> str | None:
    """The sentence with its last number changed: a year moves by a few years, a quantity by a third or more."""
    found = list(re.finditer(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])", sentence))
    if not found:
        return None
    match = found[-1]
    raw = match.group().replace(",", "")
    try:
        value = float(raw)
    except ValueError:
        return None
    if _YEAR.fullmatch(match.group()):
        new = str(int(value) + (seed % 9 + 2) * (1 if seed % 2 else -1))
    else:
        factor = (1.5, 0.5, 3.0, 0.3)[seed % 4]
        scaled = value * factor
        new = f"{scaled:.1f}" if "." in raw else str(max(1, round(scaled)) if round(scaled) != value else int(value) + 7)
    return sentence[: match.start()] + new + sentence[match.end():]


def replaced_name(sentence: str, others: Sequence[str], seed: int) -> str | None:
    """The sentence with its last name replaced by a name from another row's answer."""
    own = names(sentence)
    if not own:
        return None
    target = max(own, key=lambda n: sentence.lower().rfind(n))
    pool = sorted({n for other in others for n in names(other)} - own)
    if not pool:
        return None
    substitute = pool[seed % len(pool)]
    pattern = re.compile(rf"\b{re.escape(target)}\b", re.I)
    return pattern.sub(substitute.capitalize(), sentence, count=1)


def atomic_cases(cases: Sequence[ClaimCase], answers: Sequence[str | None]) -> list[ClaimCase]:
    """One labelled atomic claim per AVeriTeC row that has a usable answer sentence (see the module doc)."""
    usable = [AnswerSentence(i, a) for i, a in enumerate(answers) if a is not None]
    made: list[ClaimCase] = []
    for k, item in enumerate(usable):
        case = cases[item.row]
        kind = (Label.TRUE, Label.FALSE, Label.UNVERIFIABLE)[k % 3]
        text: str | None = item.text
        if kind is Label.FALSE:
            others = [u.text for u in usable[k + 1: k + 6]]
            text = changed_number(item.text, k) if numbers(item.text) and k % 2 == 0 else None
            text = text or replaced_name(item.text, others, k) or changed_number(item.text, k)
        elif kind is Label.UNVERIFIABLE:
            text = usable[(k + len(usable) // 2) % len(usable)].text
        if text is None or text == item.text and kind is not Label.TRUE:
            continue
        made.append(
            replace(case, case_id=f"{case.case_id}-atomic-{kind.value}", turn=replace(case.turn, text=text), label=kind)
        )
    return made


def read_atomic(path: Path, limit: int | None = None) -> list[ClaimCase]:
    """Atomic claims made from an AVeriTeC file (see the module doc)."""
    cases = read_averitec(path)
    answers = [answer_sentence(list(row.get("evidence") or [])) for _, row in read_jsonl(path)]
    made = atomic_cases(cases, answers)
    return made[:limit] if limit is not None else made
