"""Rules that make a turn's claims stand alone, applied after the model proposes them.

A claim is checked on its own, against evidence that knows nothing of the
dialogue, so it must carry its own subject and never borrow the user's words:

* a reply that only answers a question ("First for Women.") is checked
  together with the question it answers;
* a claim that begins with a pronoun gets what the pronoun stands for, from
  the turn's earlier claims and then the dialogue before it, read off a
  dependency parse (:mod:`agents.parsing`): "he" or "she" the person named
  last (the parser's entity recogniser says who is a person); "it" or "they"
  the nearest earlier mention of the same
  number, subjects first, so "They used a mounting block" after "How did
  knights mount ...?" becomes "Knights used a mounting block"; an "it" that
  stands for nothing ("It is known that ...") and "this" or "that" pointing at a
  whole event are left as they are; a demonstrative with its noun ("These colors
  ...") takes an earlier mention that names that noun in full ("team colors");
* a question is never a claim, and neither is a sentence made of the user's
  words rather than the reply's;
* near-duplicates (the same content words, give or take a few) are dropped,
  keeping the fuller claim.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from agents.parsing import PLURAL_PRONOUNS, Mention, SentenceParser
from agents.text import PRONOUN_START, content_words, coverage, sentences
from schemas import ContextLine, Role

_POSSESSIVE = frozenset({"his", "her", "its", "their"})
_ARTICLES = frozenset({"a", "an", "the"})
# First words of a mention that point elsewhere themselves ("that speakeasy", "their horses") or name no thing in
# particular ("any particular episodes", "some teams").
_NOT_NAMING = frozenset("this that these those my your his her its our their any some no every each all many few "
                        "several most such other another".split())
_THING_PRONOUNS = frozenset({"it", "its", "they", "their", "them"})
PERSON_PRONOUNS = frozenset({"he", "she", "his", "her", "him"})
# The two sets above and the demonstratives ("this", "that", "these", "those"; resolved only with a noun) cover every
# pronoun PRONOUN_START finds.
# A verb contracted onto the pronoun ("it's", "they're"); "'s" before "been" or "got" is "has".
_CONTRACTION = re.compile(r"^['’](s|re|ll|ve|d)\b(?=(\s+(?:been|got)\b)?)", re.IGNORECASE)
_CONTRACTED = {"s": "is", "re": "are", "ll": "will", "ve": "have", "d": "would"}
# "It" and "they" point back at most this many sentences; further back a guess is more often wrong than right.
REFERENT_SENTENCES = 3
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


def opens_with_placeholder_it(claim: str, parser: SentenceParser) -> bool:
    """The claim opens with an "it" that stands for nothing ("It takes years to ..."): nothing to resolve."""
    pronoun = leading_pronoun(claim)
    return pronoun is not None and pronoun.lower() == "it" and parser.dummy_subject(claim.strip())


def referent(
    earlier: Sequence[str], parser: SentenceParser, fits: Callable[[Mention], bool], window: int | None
) -> Mention | None:
    """What a leading pronoun most likely stands for, among the mentions that ``fits`` in the last ``window``
    earlier sentences (all when None): a pronoun that opens a sentence usually continues an earlier
    subject, so a subject counts as one sentence nearer than it is; the nearest wins; on a tie, a mention
    that names its thing wins over a pronoun (which only says that something earlier was meant), then a
    subject."""
    recent = [s for text in earlier for s in sentences(text)]
    ranked: list[tuple[int, bool, int, Mention]] = []
    for distance, sentence in enumerate(reversed(recent[-window:] if window else recent)):
        for mention in parser.mentions(sentence):
            if fits(mention):
                ranked.append((distance + (0 if mention.subject else 1), mention.pronoun, 0 if mention.subject else 1,
                               mention))
    return min(ranked, key=lambda r: r[:3])[3] if ranked else None  # min keeps the nearer of equals


def person_referent(earlier: Sequence[str], parser: SentenceParser, known: Sequence[str] = ()) -> str | None:
    """Who "he" or "she" is: the person named last in the dialogue's recent turns (a name the parser's
    entity recogniser knows as a person's; a place, a work or an interjection never is). A dialogue keeps
    calling the same person "he" for turns on end, so earlier "he"s are passed over on the way back to
    the name. When the recent turns name nobody, the last of ``known`` (people named in turns too old to be
    read again, most recent last) is the one."""
    found = referent(earlier, parser, lambda m: not m.plural and not m.pronoun and m.person, None)
    if found is not None:
        return found.text
    return known[-1] if known else None


def people_named(text: str, parser: SentenceParser) -> list[str]:
    """The people ``text`` names, in the order its sentences name them (subjects first within one)."""
    return [m.text for s in sentences(text) for m in parser.mentions(s) if m.person and not m.pronoun]


def names_nobody(claim: str, earlier: Sequence[str], known: Sequence[str], parser: SentenceParser) -> bool:
    """The claim is about "he" or "she" and the conversation never names a person: a story about someone
    unnamed ("He looked at his report card ...") or a person only described ("the president who spoke about
    the Berlin Wall"). Evidence cannot be looked up for it, and a guess at who would check a claim nobody
    made. A proper noun the parser cannot place ("When did Beethoven die?") may be the name, so then the
    claim is kept as it is."""
    pronoun = leading_pronoun(claim)
    if pronoun is None or pronoun.lower() not in PERSON_PRONOUNS or known:
        return False
    if person_referent(earlier, parser) is not None:
        return False
    return not any(parser.may_name_person(s) for text in earlier for s in sentences(text))


def thing_referent(plural: bool, earlier: Sequence[str], parser: SentenceParser) -> str | None:
    """What "it" or "they" stands for: a mention of the same number in the last few sentences; "it" never
    stands for a person."""
    def fits(m: Mention) -> bool:
        return m.plural == plural and not (m.person and not plural)

    found = referent(earlier, parser, fits, REFERENT_SENTENCES)
    # When the winner is itself "it" or "they", the sentences before it already leaned on something
    # further back: a chain this rule does not follow, since things change more often than people do.
    return found.text if found and not found.pronoun else None


def as_subject(mention: str) -> str:
    """A mention made to open a sentence about a known thing: "a horse" -> "The horse", "coach Silas" ->
    "Coach Silas"."""
    first, _, rest = mention.partition(" ")
    if first.lower() in ("a", "an") and rest:
        mention = f"the {rest}"
    return mention[0].upper() + mention[1:]


def resolve_pronoun(claim: str, earlier: Sequence[str], parser: SentenceParser, known: Sequence[str] = ()) -> str:
    """The claim with a leading pronoun replaced by its referent; unchanged when there is none to find, when
    the pronoun stands for nothing ("It is known that ..."), or when the claim already names the referent.
    ``known``: people named in turns older than ``earlier`` (see :func:`person_referent`)."""
    pronoun = leading_pronoun(claim)
    if pronoun is None:
        return claim
    kind = pronoun.lower()
    if kind in _THING_PRONOUNS:
        if opens_with_placeholder_it(claim, parser):
            return claim
        found = thing_referent(kind in PLURAL_PRONOUNS, earlier, parser)
    elif kind in PERSON_PRONOUNS:
        found = person_referent(earlier, parser, known)
    else:
        # "this", "that" ...: "That was ..." points at an event or a whole sentence, not at a name; "These colors"
        # names its thing by its noun, which an earlier mention may name in full.
        return resolve_demonstrative(claim, earlier, parser)
    if found is None or found.lower() in claim.lower():
        return claim
    name = as_subject(found)
    rest = claim.strip()[len(pronoun):]
    if kind in _POSSESSIVE:
        name = f"{name}'" if name.endswith("s") and kind == "their" else f"{name}'s"
    elif contraction := _CONTRACTION.match(rest):
        # "It's a museum" -> "Yad Vashem is a museum": after a name, "'s" would read as a possessive.
        verb = "has" if contraction.group(2) else _CONTRACTED[contraction.group(1).lower()]
        rest = f" {verb}{rest[len(contraction.group(1)) + 1:]}"
    return name + rest


def resolve_demonstrative(claim: str, earlier: Sequence[str], parser: SentenceParser) -> str:
    """A claim opening with a demonstrative and its noun ("These colors have ...") with the phrase replaced by
    the nearest earlier mention with the same noun and number that says more ("team colors" -> "The team colors
    have ..."); unchanged when there is none. A mention that points elsewhere itself or names no thing in
    particular (:data:`_NOT_NAMING`) would resolve nothing, and neither would one that is only an article and
    the noun ("the episodes" for "those episodes")."""
    phrase = parser.demonstrative_phrase(claim.strip())
    if phrase is None:
        return claim
    words, noun, plural = phrase

    def fits(m: Mention) -> bool:
        named = m.text.lower().split()
        said = [w for w in named if w not in _ARTICLES]
        return not m.pronoun and m.plural == plural and noun in said and len(said) > 1 and named[0] not in _NOT_NAMING

    found = referent(earlier, parser, fits, REFERENT_SENTENCES)
    if found is None:
        return claim
    first = found.text.split()[0]
    name = found.text if first[0].isupper() or first.lower() in _ARTICLES else f"the {found.text}"
    return as_subject(name) + claim.strip()[len(words):]


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


# A question that opens with what the user states: "Rob Jenkins is an Australian actor, which of his films ...?"
_STATEMENT_BEFORE_QUESTION = re.compile(r"^(.+?),\s*(?:which|what|who|whom|whose|where|when|why|how)\b", re.IGNORECASE)


def _asks(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


def user_statements(context: Sequence[ContextLine]) -> list[str]:
    """What the user said as fact, not asked: their sentences that are no question, and the statement a
    question opens with before its question word ("X is an actor, which of his films ...?")."""
    found = []
    for line in context:
        if line.role is not Role.USER:
            continue
        for sentence in sentences(line.text):
            if not _asks(sentence):
                found.append(sentence)
            elif (opening := _STATEMENT_BEFORE_QUESTION.match(sentence)) and _VERB.search(opening.group(1)):
                found.append(opening.group(1))
    return found


def is_user_text(claim: str, turn_text: str, context: Sequence[ContextLine]) -> bool:
    """The claim repeats the user's words rather than the reply's: a question echoed back as a claim, or
    something the user stated ("I have a black purse.") that the reply does not say itself."""
    user_words = content_words(" ".join(c.text for c in context if c.role is Role.USER))
    words = content_words(claim)
    if not words or not user_words:
        return False
    in_turn = coverage(words, content_words(turn_text))
    if in_turn < 0.5 and coverage(words, user_words) >= 0.75:
        return True
    # A statement of the user's may share a name or two with the reply ("Nice! I like to wear black too." after
    # "I have a black purse ..."); it is the reply's only if the reply states most of it (asking about it is
    # not saying it: "Which checkups are you looking to undergo?").
    said = content_words(" ".join(s for s in sentences(turn_text) if not _asks(s)))
    return coverage(words, said) < 0.75 and any(coverage(words, content_words(s)) >= 0.75 for s in user_statements(context))


# An inflection ending, not the "eed" of "succeed" or "agreed"; and a final "e" that the ending replaced
# ("practice" / "practicing", "game" / "games").
_ENDING = re.compile(r"(?<=\w{3})(ing|(?<!e)ed|es|s)$")
_FINAL_E = re.compile(r"(?<=\w{3})e$")


def stem(word: str) -> str:
    return _FINAL_E.sub("", _ENDING.sub("", word))


def stems(text: str) -> set[str]:
    """Content words without their inflection, so "It gets crowded" and "It can get crowded" share "get"."""
    return {stem(w) for w in content_words(text)}


def near_duplicate(a: str, b: str) -> bool:
    wa, wb = stems(a), stems(b)
    if not wa or not wb:
        return a.strip().lower() == b.strip().lower()
    return wa <= wb or wb <= wa or len(wa & wb) / len(wa | wb) >= DUPLICATE_OVERLAP


def drop_duplicates(claims: Sequence[str]) -> list[str]:
    """Claims in order, each near-duplicate group kept once as its fullest member.

    A fuller claim may be the twin of several kept ones ("The Twilite Tone", "Remi Kabaka Jr.", then the
    sentence naming both): it takes the first one's place and the others go."""
    kept: list[str] = []
    for claim in claims:
        twins = [i for i, k in enumerate(kept) if near_duplicate(claim, k)]
        if not twins:
            kept.append(claim)
            continue
        first, *others = twins
        kept[first] = max([kept[i] for i in twins] + [claim], key=lambda c: len(content_words(c)))  # ties: earliest
        kept = [k for i, k in enumerate(kept) if i not in others]
    return kept
