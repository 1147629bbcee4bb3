"""Chronological evidence: passages ordered by published date, undated ones last.

The retrieve stage (and, without retrieval, the check command and the eval
harness) builds :class:`~schemas.Evidence` through :func:`assemble_evidence`
so every consumer sees the same order and the same bounded size.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from agents.errors import InputError
from agents.inputs import read_jsonl
from agents.text import content_words, coverage, quoted_with_lead_in, sentences, truncate, with_lead_in
from schemas import ClaimSet, Evidence, GroundingDocument, Passage, ids
from schemas.records import MAX_PASSAGE_CHARS, MAX_PASSAGES

# A passage published within this many days of retrieval counts as "recent" (evidence about the present).
RECENT_DAYS = 365


def chronological(passages: Iterable[Passage]) -> list[Passage]:
    """Oldest first; undated passages after the dated ones, best-scored first among equals."""
    return sorted(passages, key=lambda p: (p.published_at is None, p.published_at or "", -p.score))


def assemble_evidence(claimset: ClaimSet, passages: Iterable[Passage], note: str = "") -> Evidence:
    unique: dict[str, Passage] = {}
    for p in passages:
        unique.setdefault(p.passage_id, p)
    # Keep the best-scored passages, then order them in time: cutting after ordering would drop the newest.
    best = sorted(unique.values(), key=lambda p: -p.score)[:MAX_PASSAGES]
    ordered = chronological(best)
    return Evidence(
        evidence_id=ids.evidence_id(claimset.conversation_id, claimset.turn_id),
        claimset=claimset,
        passages=tuple(ordered),
        note=note if ordered else (note or "no evidence found"),
    )


def recency_note(passages: Iterable[Passage], today: str, recent_days: int = RECENT_DAYS) -> str:
    """A note when no passage is recent: the evidence should cover the present, not only the claim's date."""
    dated = [p.published_at for p in passages if p.published_at]
    if not dated:
        return "no dated passage: the evidence says nothing about when it was true" if passages else ""
    newest = max(dated)
    age = (dt.date.fromisoformat(today) - dt.date.fromisoformat(newest)).days
    if age <= recent_days:
        return ""
    return f"nothing recent found: the newest passage is from {newest}, {age} days before {today}"


def parse_date(value: Any) -> str | None:
    """An ISO date (YYYY-MM-DD) from common spellings, or None when unknown or unparseable."""
    if value in (None, "", "unknown"):
        return None
    text = str(value).strip()
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        pass
    for fmt in ("%d-%m-%Y", "%Y/%m/%d", "%d/%m/%Y", "%Y"):
        try:
            return dt.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    return None


def passage_from_row(row: Mapping[str, Any], retriever: str, retrieved_at: str, where: str) -> Passage:
    """A passage from an import row with ``text``, ``url``, ``title``, ``published_at``."""
    text = str(row.get("text") or "").strip()
    if not text:
        raise InputError(f"{where}: the passage has no 'text'; every line needs text, url, title, published_at")
    url = str(row.get("url") or "")
    return Passage(
        passage_id=ids.passage_id(url, text),
        text=truncate(text, MAX_PASSAGE_CHARS),
        url=truncate(url, 2000),
        title=truncate(str(row.get("title") or ""), 500),
        published_at=parse_date(row.get("published_at")),
        retrieved_at=retrieved_at,
        retriever=retriever,
        primary=bool(row.get("primary", False)),
        score=float(row.get("score", 0.0) or 0.0),
    )


PASSAGE_CHARS = 600


def render_evidence(passages: Sequence[Passage]) -> str:
    if not passages:
        return "(none)"
    return "\n".join(
        f"[{i}] {p.published_at or 'undated'} {truncate(' '.join(p.text.split()), PASSAGE_CHARS)}"
        for i, p in enumerate(passages, start=1)
    )


# A quote long enough for a sentence and its context, short enough to read in a verdict line.
QUOTE_CHARS = 300


def closest_sentence(claim: str, passage: Passage) -> str:
    """The passage's sentence that shares most of the claim's words (the first of equals), with the sentence
    after it when it is a question: evidence written as question and answer ("Did X happen? No, ...")
    says what it says in the answer. A sentence that opens with a pronoun is read, and quoted, with the one
    before it ("The tower is in Paris. It was completed in 1889.")."""
    parts = sentences(passage.text) or [passage.text]
    read = with_lead_in(parts)
    claim_words = content_words(claim)
    best = max(range(len(parts)), key=lambda i: (coverage(claim_words, content_words(read[i])), -i))
    quote = " ".join(parts[best : best + 2]) if parts[best].rstrip().endswith("?") else quoted_with_lead_in(parts, best)
    return truncate(" ".join(quote.split()), QUOTE_CHARS)


def today() -> str:
    return dt.date.today().isoformat()


GROUNDING = "grounding"  # the retriever name of the documents a turn came with
UNTITLED_GROUNDING = "document the bot answered from"


def grounding_passages(documents: Iterable[GroundingDocument], received_on: str) -> tuple[Passage, ...]:
    """The documents a turn came with, as passages: dated as their sources gave them, "retrieved" when the
    bot received them (``received_on``). One without a title is called what it is, so an alert's source
    list names it for a person instead of showing a passage id."""
    return tuple(
        Passage(passage_id=ids.passage_id(d.url, d.text), text=d.text, url=d.url,
                title=d.title or UNTITLED_GROUNDING, published_at=d.published_at, retrieved_at=received_on,
                retriever=GROUNDING)
        for d in documents
    )


def grounding_documents(raw: Any, where: str) -> tuple[GroundingDocument, ...]:
    """The documents a turn was answered from, from JSON (a list of ``{text, [url], [title],
    [published_at]}``); an unreadable date becomes unknown, as in the knowledge base."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(d, dict) and str(d.get("text") or "").strip() for d in raw):
        raise InputError(f"{where}: grounding must be a list of documents, each with text (url, title and"
                         " published_at optional)")
    return tuple(
        GroundingDocument(text=str(d["text"]).strip(), url=str(d.get("url") or ""), title=str(d.get("title") or ""),
                          published_at=parse_date(d.get("published_at")))
        for d in raw
    )


def is_grounded(passages: Sequence[Passage]) -> bool:
    """Whether the evidence is the documents the turn came with (and nothing retrieved): such a turn is
    judged for staying with its source, by the calibration's grounded fit."""
    return bool(passages) and all(p.retriever == GROUNDING for p in passages)


class EvidenceKind(StrEnum):
    """What a verdict was judged against, for counting verdicts apart (a metrics label)."""

    GROUNDED = "grounded"  # the documents the turn came with
    RETRIEVED = "retrieved"  # passages from the knowledge base or the web
    CLOSED_BOOK = "closed_book"  # nothing: the model's own knowledge

    @classmethod
    def of(cls, passages: Sequence[Passage]) -> EvidenceKind:
        if not passages:
            return cls.CLOSED_BOOK
        return cls.GROUNDED if is_grounded(passages) else cls.RETRIEVED


def day_of(timestamp: float) -> str:
    """The UTC date of a unix timestamp; today for 0 (a turn that did not say when it was made)."""
    return dt.datetime.fromtimestamp(timestamp, dt.timezone.utc).date().isoformat() if timestamp else today()


def read_passages(path: Path, retriever: str = "file") -> list[Passage]:
    """Evidence JSONL: one passage a line with text, url, title, published_at."""
    retrieved = today()
    return [passage_from_row(row, retriever, retrieved, f"{path}:{n}") for n, row in read_jsonl(path)]


def _days_between(a: str, b: str) -> int:
    return abs((dt.date.fromisoformat(a) - dt.date.fromisoformat(b)).days)


def proximity(published_at: str | None, references: Sequence[str]) -> float:
    """1.0 on a reference date, 0.5 a year away; 0.5 for an undated document (neither near nor far)."""
    if published_at is None:
        return 0.5
    return max(1.0 / (1.0 + _days_between(published_at, ref) / 365.0) for ref in references)
