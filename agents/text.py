"""Small, deterministic text helpers shared by the stages (no model involved)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher

from schemas import ContextLine, Role

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d+(?:[.,]\d+)*")
# Where a user's statement ends and the next sentence begins, stricter than _SENTENCE_END: after a word of
# two or more letters, so initials and abbreviations ("Mark L. Lester", "U.S. Army") never cut a question.
_STATEMENT_END = re.compile(r"(?<=[a-z0-9]{2}[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A subject or possessive pronoun at the start of a sentence: it does not say who or what on its own.
PRONOUN_START = re.compile(r"^(he|she|it|they|this|that|these|those|his|her|its|their|him|them)\b", re.IGNORECASE)
# The word a full stop ends, when the stop may be an abbreviation's rather than the sentence's.
_LAST_WORD = re.compile(r"(?:^|[\s(\[\"'])([A-Za-z]+)\.$")
# Titles stand before a name and so never end a sentence; an initial is one capital letter.
_TITLES = frozenset("mr mrs ms dr prof sen rep gov gen col lt capt sgt rev st mt ft hon pres".split())
# Abbreviations that end a sentence only when no number follows ("in Sept." | "Sept. 11", "No. 1").
_BEFORE_A_NUMBER = frozenset("no nos jan feb mar apr jun jul aug sep sept oct nov dec vol pp fig".split())

STOPWORDS = frozenset(
    """a an the and or but if then of to in on at by for with from as is are was were be been being it its
    this that these those there their they them he she his her we our you your i me my mine not no yes do does
    did has have had will would can could should may might must shall than so such very also just about into
    over under after before during while which who whom whose what when where why how all any some each more
    most other only own same too up down out off again further once here both few nor per via
    around approximately roughly nearly almost less least""".split()
)


# C0 and C1 control characters but tab and newlines, and the bidirectional overrides that make text read
# differently from how it is stored: chatbot text is hostile input, and none of these carries a fact.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def without_control_characters(text: str) -> str:
    """``text`` with control characters (NUL included) and bidi overrides removed; tab and newlines kept."""
    return _CONTROL.sub("", text)


_OPENING_QUOTE = re.compile(r'(^|[\s(\[{\u2014-])"')


def curly_quotes(text: str) -> str:
    """Straight double quotes as typographic ones: "Pure Mule" -> “Pure Mule”.

    The model writes its answers as JSON, where a straight quote ends a string: a small model that copies a
    quoted title ("starred in "The Map"") closes the string there and the claim loses the title, the very
    words a made-up answer gets wrong. A typographic quote is ordinary text in JSON."""
    return _OPENING_QUOTE.sub("\\1“", text).replace('"', "”")


_TYPOGRAPHIC = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


def straight_quotes(text: str) -> str:
    """Typographic quotes and apostrophes made plain again: what the model writes back after seeing
    :func:`curly_quotes` reads like the turn it came from."""
    return text.translate(_TYPOGRAPHIC)


def sentences(text: str) -> list[str]:
    """Split text into sentences on end punctuation followed by a capital or digit, except after an initial
    or an abbreviation that always has more to come ("I. M. Pei", "Sen. Wyden", "Sept. 11", "No. 1")."""
    text = text.strip()
    parts: list[str] = []
    start = 0
    for end in _SENTENCE_END.finditer(text):
        # Only the stop's last word matters; a bounded tail keeps long pages linear (longer words are no
        # abbreviation, however they are cut).
        if _continues(text[max(start, end.start() - 24) : end.start()], text[end.end()]):
            continue
        parts.append(text[start : end.start()].strip())
        start = end.end()
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _continues(before: str, next_char: str) -> bool:
    """Whether the full stop that ends ``before`` is an abbreviation's, so the sentence goes on."""
    last = _LAST_WORD.search(before)
    if last is None:
        return False
    word = last.group(1)
    if len(word) == 1 and word.isupper():
        return True  # an initial: "I. M. Pei", "George W. Bush"
    return word.lower() in _TITLES or (word.lower() in _BEFORE_A_NUMBER and next_char.isdigit())


def clauses(text: str) -> list[str]:
    """Sentences, further split at semicolons: each part states something on its own."""
    return [c.strip() for sentence in sentences(text) for c in sentence.split(";") if c.strip()]


# A subject pronoun opening a sentence: it stands for what the sentence before it was about. (Not a possessive:
# "Its entrance was completed in 1989." is about the entrance, not about what "its" stands for.)
_SUBJECT_PRONOUN = re.compile(r"^(he|she|it|they)\b", re.IGNORECASE)
# Where the subject of a plain sentence ends: its first auxiliary, copula or past-tense verb.
_FIRST_VERB = re.compile(r"\b(is|are|was|were|has|have|had|will|would|can|could|may|might|must|did|does|do|"
                         r"[a-z]{2,}ed)\b")


def subject_of(sentence: str) -> str:
    """The words before the first verb of a plain sentence ("The Louvre in Paris" of "The Louvre in Paris
    opened in 1793."): a cheap stand-in for its subject; empty when no verb is found."""
    match = _FIRST_VERB.search(sentence)
    return sentence[: match.start()].strip() if match else ""


def leans_on_previous(parts: Sequence[str], i: int) -> bool:
    """``parts[i]`` opens with a subject pronoun that the part before it names ("It was completed in 1889.")."""
    return i > 0 and _SUBJECT_PRONOUN.match(parts[i]) is not None and bool(subject_of(parts[i - 1]))


def with_lead_in(parts: Sequence[str]) -> list[str]:
    """Each of ``parts`` (a text's sentences or clauses, in order) as a reader takes it, to compare words with:
    one that opens with a subject pronoun has the subject of the part before it in front ("The Eiffel Tower
    it was completed in 1889."), since that is what it is about."""
    # The pronoun is lower-cased: in mid-text a capitalised "It" would read as a name.
    return [f"{subject_of(parts[i - 1])} {part[0].lower()}{part[1:]}" if leans_on_previous(parts, i) else part
            for i, part in enumerate(parts)]


def quoted_with_lead_in(parts: Sequence[str], i: int) -> str:
    """``parts[i]`` to quote to a person: with the whole part before it when it leans on that one."""
    return f"{parts[i - 1]} {parts[i]}" if leans_on_previous(parts, i) else parts[i]


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def word_set(text: str) -> set[str]:
    """Every distinct word of ``text``, lower-cased: cheaper than ``content_words`` when it only meets a set
    of content words (an intersection or a coverage), since stopwords then drop out anyway."""
    return set(_WORD.findall(text.lower()))


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS and len(w) > 1}


def numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def names(text: str) -> set[str]:
    """Capitalized words that are not sentence-initial: a cheap stand-in for named entities."""
    found: set[str] = set()
    for sentence in sentences(text):
        tokens = sentence.split()
        for tok in tokens[1:]:
            word = tok.strip(".,;:!?\"'()[]")
            if word[:1].isupper() and word.lower() not in STOPWORDS and len(word) > 1:
                found.add(word.lower())
    return found


def coverage(part: Iterable[str], whole: set[str]) -> float:
    """Fraction of ``part`` found in ``whole`` (1.0 for an empty part)."""
    items = set(part)
    if not items:
        return 1.0
    return len(items & whole) / len(items)


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def normalized(text: str) -> str:
    """Lower case with typographic apostrophes made plain, for matching words across sources."""
    return text.lower().replace("\u2019", "'").replace("\u2018", "'")


def mentions(text: str, word: str) -> bool:
    """Whether ``word`` occurs in ``text`` as a whole word (case and apostrophe style ignored)."""
    return re.search(rf"(?<![\w-]){re.escape(normalized(word))}(?![\w-])", normalized(text)) is not None


def same_number(a: str, b: str) -> bool:
    """Equal, or the same quantity rounded (8,849 and 8,848.86; 45 million and 45.1 million).

    Whole numbers that look like years must match exactly: 1889 and 1899 are different claims. A dotted
    string that is no single quantity (a version "0.9.0", a date "20.07.1969") matches only itself.
    """
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a == b
    if x == y:
        return True
    if all(v.is_integer() and 1000 <= v <= 2100 for v in (x, y)):
        return False
    return abs(x - y) <= 0.01 * max(abs(x), abs(y)) or round(x) == round(y) and "." in a + b


# Capitalised, but dates rather than names: a month never stands in for a person or a place.
DATE_WORDS = frozenset(
    """january february march april may june july august september october november december jan feb mar apr jun
    jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday""".split()
)


def title_cased(text: str) -> bool:
    """Headline style ("Wildfires do not Affect Mexico And Canada"): capitals there mark words, not names.

    Told by a capitalised small word inside a sentence ("And", "The", "Is"); a sentence that is
    merely full of names ("The Eiffel Tower is in Berlin") keeps its small words in lower case.
    """
    tokens = text.split()
    for previous, token in zip(tokens, tokens[1:]):
        word = token.strip(".,;:!?\"'()[]")
        if previous[-1:] not in ".!?:" and len(word) > 1 and word.lower() in STOPWORDS and word[:1].isupper():
            return True
    return False


_POSSESSIVE_END = re.compile(r"['\u2019]s$")


def without_possessive(word: str) -> str:
    """A word without its possessive ending ("egypt's" -> "egypt"): the name the evidence must hold."""
    return _POSSESSIVE_END.sub("", word)


def value_names(text: str) -> set[str]:
    """Names (see :func:`names`) that can be swapped for another: possessive endings removed, apostrophes
    made plain, dates left out; none for headline-style text (see :func:`title_cased`)."""
    if title_cased(text):
        return set()
    return {without_possessive(normalized(n)) for n in names(text)} - DATE_WORDS


def same_name(a: str, b: str) -> bool:
    """The same name up to spelling or form: organisation/organization, Africa/African."""
    return a == b or min(len(a), len(b)) >= 4 and SequenceMatcher(None, a, b).ratio() >= 0.85


def names_in(text: str, name: str) -> bool:
    """Whether ``text`` has ``name`` (U.S., Trump's) or a spelling of it as one of its words."""
    return mentions(text, name) or any(same_name(name, without_possessive(w)) for w in words(normalized(text)))


def years(text: str) -> set[str]:
    """Numbers written as a year: four digits without separators (1889, not 1,927)."""
    return {n for n in _NUMBER.findall(text) if n.isdigit() and 1000 <= int(n) <= 2100}


def last_user_line(context: Sequence[ContextLine]) -> str:
    """What the user said last, whole ("" when the user has said nothing)."""
    return next((line.text for line in reversed(context) if line.role is Role.USER), "")


def last_question(context: Sequence[ContextLine]) -> str | None:
    """The user's question the reply answers: the last question of the last user line, without what the user
    said before it ("I studied law. Do you read novels?" asks "Do you read novels?"), so a reply checked
    together with its question never takes the user's own statements as the assistant's."""
    for line in reversed(context):
        if line.role is Role.USER:
            parts = [p for p in _STATEMENT_END.split(" ".join(line.text.split())) if p]
            asked = [p for p in parts if "?" in p]
            return asked[-1] if asked else None
    return None


def answer_part(claim: str, context: Sequence[ContextLine]) -> str:
    """The reply's own part of a claim: a bare answer's claim (``Question? Answer.``, as segmentation writes it) without its question."""
    question = last_question(context)
    if question is not None and claim.startswith(question):
        return claim[len(question):].strip()
    return claim
