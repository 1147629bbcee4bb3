"""Rules that make a turn's claims stand alone, applied after the model proposes them.

A claim is checked on its own, against evidence that knows nothing of the
dialogue, so it must carry its own subject and never borrow the user's words:

* a reply that only answers a question ("First for Women.") is checked
  together with the question it answers;
* a claim that begins with a pronoun ("He founded ...") gets the name the
  pronoun stands for: the first name of the nearest earlier sentence that has
  one, in the turn and then the dialogue before it;
* a question is never a claim, and neither is a sentence made of the user's
  words rather than the reply's;
* near-duplicates (the same content words, give or take a few) are dropped,
  keeping the fuller claim.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents.text import STOPWORDS, content_words, coverage, sentences
from schemas import ContextLine, Role

# A subject or possessive pronoun at the start of a claim: the claim does not say who or what.
PRONOUN_START = re.compile(r"^(he|she|it|they|this|that|these|those|his|her|its|their|him|them)\b", re.IGNORECASE)
_POSSESSIVE = {"his", "her", "its", "their"}
# A run of capitalised words, allowing "of", "the", "de" ... inside ("Bank of England", "Leonardo da Vinci").
_NAME = re.compile(r"[A-Z][\w'\-]*(?:\s+(?:(?:of|the|de|da|von|van|del|la|and|&)\s+)?[A-Z][\w'\-]*)*")
_NOT_A_NAME = frozenset(
    "i i'm i've i'd i'll yes no sure well oh hi hello hey thanks okay ok also however but and so then there here "
    "what which who whom whose when where why how do does did is are was were can could would should will".split()
) | STOPWORDS
# Auxiliaries, copulas and past forms: a cheap sign that words make a sentence rather than a bare answer.
# "'s" counts only after a pronoun ("it's"): after a name it is a possessive ("Arthur's Magazine").
_VERB = re.compile(
    r"\b(is|are|was|were|be|been|being|am|has|have|had|do|does|did|will|would|can|could|may|might|must|shall|"
    r"should|(?:it|that|he|she|there|here|what|who|where|this)'s|'re|[a-z]{3,}ed)\b",
    re.IGNORECASE,
)
# At most this many words make a reply a bare answer that needs its question to mean anything.
SHORT_ANSWER_WORDS = 6
# Claims sharing at least this share of their content words (Jaccard) say the same thing.
DUPLICATE_OVERLAP = 0.8


def leading_pronoun(claim: str) -> str | None:
    match = PRONOUN_START.match(claim.strip())
    return match.group(1) if match else None


def first_name(sentence: str) -> str | None:
    """The first name in a sentence (a run of capitalised words that is not a pronoun or function word)."""
    for match in _NAME.finditer(sentence):
        words = match.group(0).split()
        while words and words[0].lower().strip("'") in _NOT_A_NAME:
            words = words[1:]
        if words and not all(w.lower() in _NOT_A_NAME for w in words):
            return " ".join(words).rstrip("'")
    return None


def referent(earlier: Sequence[str]) -> str | None:
    """What a pronoun most likely stands for: the first name of the nearest earlier sentence that has one."""
    for text in reversed(earlier):
        for sentence in reversed(sentences(text)):
            name = first_name(sentence)
            if name is not None:
                return name
    return None


def resolve_pronoun(claim: str, earlier: Sequence[str]) -> str:
    """The claim with a leading pronoun replaced by its referent; unchanged when there is none to find."""
    pronoun = leading_pronoun(claim)
    if pronoun is None:
        return claim
    name = referent(earlier)
    if name is None or name.lower() in claim.lower():
        return claim
    replacement = f"{name}'s" if pronoun.lower() in _POSSESSIVE else name
    return replacement + claim.strip()[len(pronoun):]


def is_bare_answer(text: str, question: str) -> bool:
    """A few words that answer the question but say nothing on their own ("First for Women.", "Niagara County").

    A short sentence with a verb ("The tower is in Berlin.") or one that restates the question's subject
    ("The Berlin Wall fell in 1989.") says what it claims and stands alone.
    """
    n = len(text.split())
    if n > SHORT_ANSWER_WORDS or _VERB.search(text):
        return False
    return n <= 3 or coverage(content_words(text), content_words(question)) < 0.5


def with_question(question: str, answer: str) -> str:
    """A bare answer made checkable: the question it answers, then the answer ("Who ...? Jon Favreau.")."""
    answer = answer.strip()
    return f"{question.strip()} {answer if answer.endswith(('.', '!')) else answer + '.'}"


def is_user_text(claim: str, turn_text: str, context: Sequence[ContextLine]) -> bool:
    """The claim repeats the user's words rather than the reply's (a question echoed back as a claim)."""
    user_words = content_words(" ".join(c.text for c in context if c.role is Role.USER))
    words = content_words(claim)
    if not words or not user_words:
        return False
    return coverage(words, content_words(turn_text)) < 0.5 and coverage(words, user_words) >= 0.75


def near_duplicate(a: str, b: str) -> bool:
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return a.strip().lower() == b.strip().lower()
    return wa <= wb or wb <= wa or len(wa & wb) / len(wa | wb) >= DUPLICATE_OVERLAP


def drop_duplicates(claims: Sequence[str]) -> list[str]:
    """Claims in order, each near-duplicate group kept once as its fullest member."""
    kept: list[str] = []
    for claim in claims:
        twin = next((i for i, k in enumerate(kept) if near_duplicate(claim, k)), None)
        if twin is None:
            kept.append(claim)
        elif len(content_words(claim)) > len(content_words(kept[twin])):
            kept[twin] = claim
    return kept
