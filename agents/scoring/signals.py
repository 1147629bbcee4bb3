"""Cheap claim-vs-evidence signals: word overlap, conflicting numbers and names, negation, value swaps.

They explain a verdict to a person (``Signals.notes``) and, with the model's
label scores and evidence fit, make the feature vector the calibration
(:mod:`agents.scoring.calibration`) combines into the final label scores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agents.scoring.calibration import FEATURE_NAMES
from agents.text import (
    DATE_WORDS,
    STOPWORDS,
    answer_part,
    clauses,
    content_words,
    coverage,
    last_user_line,
    mentions,
    names,
    names_in,
    normalized,
    numbers,
    quoted_with_lead_in,
    same_number,
    sentences,
    value_names,
    with_lead_in,
    without_possessive,
    years,
)
from schemas import ContextLine, EvidenceFit, Label, LabelScores, Passage

_NEGATION = re.compile(r"\b(not|no|never|none|nobody|neither|nor|n't|cannot|false|denied|deny|denies)\b", re.I)


@dataclass(frozen=True)
class Signals:
    """Cheap claim-vs-evidence signals; ``notes`` explain them to a person."""

    values: tuple[float, ...]
    notes: tuple[str, ...]
    best_passage: int | None  # index into the passages, the one sharing most words with the claim
    swap: ValueSwap | None = None  # a passage sentence restating the claim with another value


@dataclass(frozen=True)
class ValueSwap:
    """A passage sentence that restates the claim with another value where the claim has one of its own."""

    passage: int  # index into the passages
    overlap: float  # share of the claim's content words the sentence has
    claimed: tuple[str, ...]  # the claim's values the sentence lacks
    stated: tuple[str, ...]  # the sentence's values of the same kind the claim lacks
    sentence: str = ""  # the sentence (or clause) itself, with the one before it when it opens with a pronoun


# A restatement with a swapped value differs in one or two values (a first and last name); a sentence that
# differs in more says something else, and pairing its values with the claim's is guesswork.
MAX_SWAPPED = 2


def unmatched_values(claim: str, sentence: str) -> list[tuple[list[str], list[str]]]:
    """Per kind of value (names, years, other numbers): the claim's values the sentence lacks, and the
    sentence's values the claim lacks. Only values of one kind are ever paired."""
    pairs = [([n for n in value_names(claim) if not names_in(sentence, n)],
              [n for n in value_names(sentence) if not names_in(claim, n)])]
    claim_years, sentence_years = years(claim), years(sentence)
    for ours, theirs in ((claim_years, sentence_years), (numbers(claim) - claim_years, numbers(sentence) - sentence_years)):
        pairs.append(([n for n in ours if not any(same_number(n, m) for m in theirs)],
                      [m for m in theirs if not any(same_number(m, n) for n in ours)]))
    return pairs


def value_swap(
    claim: str, passages: Sequence[Passage], min_overlap: float = 0.5, context: Sequence[ContextLine] = ()
) -> ValueSwap | None:
    """The closest passage sentence (or clause) that says the same as the claim with another name or number.

    "The Amazon flows into the Pacific" against "The Amazon discharges into the Atlantic": the
    sentence shares most of the claim's words, and where the claim names one ocean it names
    another. Questions are skipped (AVeriTeC's evidence asks before it answers); numbers that
    agree once rounded count as the same, and names that differ only in spelling or form; only
    values of one kind are paired (a name against a name, a year against a year); and a sentence
    that differs from the claim in more than two values of a kind is not a restatement.

    ``context`` is the dialogue before the reply: only the values of the part of the claim the reply states
    can be swapped (a bare answer's claim without the user's question, see :func:`~agents.text.answer_part`).
    The question still finds the sentence that restates the claim, but a name or number the user asked
    about is not one the reply got wrong.
    """
    claim_words = content_words(claim)
    own = answer_part(claim, context)
    own_values = value_names(own) | numbers(own)
    if not claim_words or not own_values:
        return None
    found: ValueSwap | None = None
    for index, passage in enumerate(passages):
        parts = clauses(passage.text)
        # "It was completed in 1889." after "The Eiffel Tower is ... in Paris." is about the tower: it is read
        # with the subject of the sentence before it. It must still share a word of its own with the claim, or
        # the borrowed subject alone would make any sentence about the tower a restatement ("The Eiffel Tower is
        # in Berlin." against "It was completed ... for the World's Fair").
        for i, (sentence, topic) in enumerate(zip(parts, with_lead_in(parts))):
            if sentence.endswith("?") or not claim_words & content_words(sentence):
                continue
            overlap = coverage(claim_words, content_words(topic))
            if overlap < min_overlap or (found is not None and overlap <= found.overlap):
                continue
            for claimed, stated in unmatched_values(claim, topic):
                swapped = [value for value in claimed if value in own_values]
                if swapped and stated and len(claimed) <= MAX_SWAPPED and len(stated) <= MAX_SWAPPED:
                    quote = quoted_with_lead_in(parts, i)
                    found = ValueSwap(index, overlap, tuple(sorted(swapped)), tuple(sorted(stated)), quote)
                    break
    return found


@dataclass(frozen=True)
class AnswerSupport:
    """How much of what the reply adds to the conversation the evidence backs.

    In a grounded dialogue the user's question already names the subject ("Which county is Hartland
    Swamp in?"); what the reply adds ("Erie County") is what must be in the evidence. Words, names and
    numbers the user's last line already has are left out, so a long answer that repeats the question
    is not rewarded for it. None of these grows with the answer's length.

    Whether the reply appears verbatim in the evidence is left out on purpose: on HaluEval it is
    the strongest signal (the right answers there are copied spans of the knowledge), but a
    chatbot paraphrases ("finished" for "completed"), and a verifier that learned to trust only
    copies flagged the paraphrase as an error.
    """

    word_support: float  # share of the reply's own content words found in the evidence
    names_missing: float  # share of the reply's own names the evidence lacks (0 without names)
    numbers_missing: float  # share of the reply's own numbers the evidence lacks (0 without numbers)
    missing: tuple[str, ...] = ()  # those names and numbers, to show a person

    @property
    def values(self) -> tuple[float, ...]:
        return (self.word_support, self.names_missing, self.numbers_missing)


def reply_names(text: str) -> set[str]:
    """Names in a reply, sentence-initial ones included: a bare answer ("Pretoria.") starts its sentence.

    :func:`~agents.text.names` skips the first word of a sentence, where any word is capitalised; a
    sentence-initial word that is not a name ("Completed in 1889") is then looked up in the evidence
    case-blind, where an ordinary word is usually found.
    """
    found = value_names(text)
    for sentence in sentences(text):
        first = sentence.split()[0].strip(".,;:!?\"'()[]")
        word = without_possessive(normalized(first))
        if first[:1].isupper() and len(word) > 1 and word not in STOPWORDS and word not in DATE_WORDS:
            found.add(word)
    return found


def answer_support(claim: str, passages: Sequence[Passage], context: Sequence[ContextLine] = ()) -> AnswerSupport:
    """How far the passage that talks about the claim backs what the reply adds (see AnswerSupport).

    Only that passage counts, the one sharing most of the claim's words: with several passages
    retrieved, a word found in an unrelated one ("Berlin", in a passage on the Berlin Wall, for
    "The Eiffel Tower is in Berlin") backs nothing.
    """
    asked = last_user_line(context)
    claim_words = content_words(claim)
    evidence = max((p.text for p in passages), key=lambda text: coverage(claim_words, content_words(text)), default="")
    own_words = content_words(claim) - content_words(asked) or content_words(claim)
    own_names = sorted(n for n in reply_names(answer_part(claim, context)) if not names_in(asked, n))
    missing_names = [n for n in own_names if not names_in(evidence, n)]
    evidence_numbers = numbers(evidence)
    own_numbers = sorted(n for n in numbers(claim) if not any(same_number(n, m) for m in numbers(asked)))
    missing_numbers = [n for n in own_numbers if not any(same_number(n, m) for m in evidence_numbers)]
    return AnswerSupport(
        word_support=coverage(own_words, content_words(evidence)),
        names_missing=len(missing_names) / len(own_names) if own_names else 0.0,
        numbers_missing=len(missing_numbers) / len(own_numbers) if own_numbers else 0.0,
        missing=tuple(missing_names + missing_numbers),
    )


def claim_signals(claim: str, passages: Sequence[Passage], context: Sequence[ContextLine] = ()) -> Signals:
    """Feature values in the order of FEATURE_NAMES (after the model's three label scores, before the five
    evidence-fit values).

    ``context`` is the dialogue before the turn: what the user asked is not what the reply adds.
    """
    claim_words = content_words(claim)
    all_text = " ".join(p.text for p in passages)
    all_words = content_words(all_text)
    overlaps = [coverage(claim_words, content_words(p.text)) for p in passages]
    best = max(range(len(passages)), key=overlaps.__getitem__) if passages else None
    best_overlap = overlaps[best] if best is not None else 0.0
    notes: list[str] = []

    claim_numbers = numbers(claim)
    evidence_numbers = numbers(all_text)
    missing_numbers = claim_numbers - evidence_numbers
    number_conflict = float(bool(missing_numbers) and bool(evidence_numbers))
    number_match = float(bool(claim_numbers) and not missing_numbers)
    if number_conflict:
        notes.append(f"number(s) {', '.join(sorted(missing_numbers))} not in the evidence")
    elif number_match:
        notes.append(f"number(s) {', '.join(sorted(claim_numbers))} found in the evidence")

    # "Egypt's" names Egypt: the possessive ending is no part of the name the evidence must hold, on either side
    # ("Arthur's Magazine" in the claim and in the passage).
    claim_names = {without_possessive(n) for n in names(claim)}
    evidence_words = all_words | {without_possessive(w) for w in all_words}
    # An abbreviation ("d.c", "u.s") is no single word of the evidence: it is looked up as written.
    missing_names = {n for n in claim_names if n not in evidence_words and not ("." in n and mentions(all_text, n))}
    best_names = {without_possessive(n) for n in names(passages[best].text)} if best is not None else set()
    name_conflict = float(bool(missing_names) and bool(best_names - claim_names) and best_overlap >= 0.3)
    if name_conflict:
        notes.append(f"name(s) {', '.join(sorted(missing_names))} not in the evidence, which names others")

    negation_mismatch = 0.0
    if best is not None and best_overlap >= 0.3:
        negation_mismatch = float(bool(_NEGATION.search(claim)) != bool(_NEGATION.search(passages[best].text)))
        if negation_mismatch:
            notes.append("negated in one of claim and evidence but not the other")
    swap = value_swap(claim, passages, context=context)
    if swap is not None:
        notes.append(f"[{swap.passage + 1}] says {', '.join(swap.stated)} where the claim says {', '.join(swap.claimed)}")
    if passages and best_overlap < 0.2:
        notes.append("little word overlap with any passage")
    support = answer_support(claim, passages, context) if passages else AnswerSupport(0.0, 0.0, 0.0)
    if support.missing:
        notes.append(f"the reply's {', '.join(support.missing)} not in the evidence")

    values = (
        best_overlap,
        coverage(claim_words, all_words) if passages else 0.0,
        number_conflict,
        number_match,
        name_conflict,
        negation_mismatch,
        swap.overlap if swap is not None else 0.0,
        float(not passages),
        math.log1p(len(passages)),
        *support.values,
    )
    assert len(values) + 8 == len(FEATURE_NAMES)
    return Signals(values=values, notes=tuple(notes), best_passage=best, swap=swap)


def features(model_scores: LabelScores, signals: Signals, fit: EvidenceFit) -> tuple[float, ...]:
    fitted = (fit.mean_logprob, fit.min_logprob, fit.contradiction, fit.nli_forward, fit.nli_backward)
    return tuple(model_scores.of(label) for label in Label) + signals.values + fitted


def judge_each_features(each: LabelScores) -> tuple[float, ...]:
    """What a judge's calibration reads after :func:`features`: the judge's letters beside each passage alone."""
    return tuple(each.of(label) for label in Label)
