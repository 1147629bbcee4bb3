"""The pure part of the web retriever: the directive query, and passages from what a page showed.

Kept apart from the browser so the rules are tested without one: what query
CAAFC-style directive search sends, how dates in cards are read, which links
count as primary sources, and how an AI answer with cited links becomes
dated passages.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote_plus

from agents.evidence.primary_sources import hint_words, is_official, looks_primary
from agents.text import truncate
from schemas import Claim, Passage, PrimarySource, ids
from schemas.records import MAX_PASSAGE_CHARS

MAX_QUERY_CHARS = 1500  # search pages cut or reject longer queries
MAX_PASSAGES_PER_PAGE = 12

_MONTHS = {m: i for i, m in enumerate(
    "jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_AGO = re.compile(r"\b(\d+)\s+(hour|day|week)s?\s+ago\b", re.I)


def directive_query(claims: Sequence[Claim], claim_date: str | None, sources: Sequence[PrimarySource]) -> str:
    """A query asking for dated evidence about the claims, from their date to now, primary sources first."""
    when = f"made on {claim_date}" if claim_date else "(date of the claims unknown)"
    listed = " ".join(f"{i}. {c.text}" for i, c in enumerate(claims, start=1))
    head = f"Give dated facts, oldest to newest and up to today, with their sources, about these claims {when}: "
    tail = ""
    if sources:
        tail = " Check these primary sources first: " + "; ".join(
            f"{s.where} ({s.kind})" if s.where else s.kind for s in sources) + "."
    room = MAX_QUERY_CHARS - len(head) - len(tail)
    return head + truncate(listed, max(80, room)) + tail


def search_url(template: str, query: str) -> str:
    return template.replace("{query}", quote_plus(query))


def parse_date_text(text: str, retrieved_at: str) -> str | None:
    """The first full date in ``text`` (ISO, "8 Dec 2020", "December 8, 2020", "3 days ago"), or None."""
    if not text:
        return None
    found: list[tuple[int, dt.date]] = []
    for m in _ISO.finditer(text):
        found.extend(_at(m.start(), int(m.group(1)), int(m.group(2)), int(m.group(3))))
    for m in _DAY_MONTH_YEAR.finditer(text):
        found.extend(_at(m.start(), int(m.group(3)), _MONTHS[m.group(2)[:3].lower()], int(m.group(1))))
    for m in _MONTH_DAY_YEAR.finditer(text):
        found.extend(_at(m.start(), int(m.group(3)), _MONTHS[m.group(1)[:3].lower()], int(m.group(2))))
    for m in _AGO.finditer(text):
        n, unit = int(m.group(1)), m.group(2).lower()
        days = {"hour": 0, "day": n, "week": 7 * n}[unit]
        found.append((m.start(), dt.date.fromisoformat(retrieved_at) - dt.timedelta(days=days)))
    if not found:
        return None
    return min(found, key=lambda f: f[0])[1].isoformat()


def _at(position: int, year: int, month: int, day: int) -> list[tuple[int, dt.date]]:
    try:
        return [(position, dt.date(year, month, day))]
    except ValueError:
        return []


@dataclass(frozen=True)
class SourceCard:
    """A cited link as the page showed it."""

    href: str
    title: str
    snippet: str
    date_text: str


@dataclass(frozen=True)
class AnswerParagraph:
    text: str
    links: tuple[str, ...]


@dataclass(frozen=True)
class PageData:
    """What the browser read from the page (see ``EXTRACT_JS`` in :mod:`agents.evidence.web.retriever`)."""

    url: str
    title: str
    found: bool  # the answer element exists
    paragraphs: tuple[AnswerParagraph, ...]
    sources: tuple[SourceCard, ...]
    body_text: str

    @classmethod
    def from_script(cls, data: dict) -> PageData:  # type: ignore[type-arg]
        return cls(
            url=str(data.get("url") or ""),
            title=str(data.get("title") or ""),
            found=bool(data.get("found")),
            paragraphs=tuple(AnswerParagraph(str(p.get("text") or ""), tuple(str(h) for h in p.get("links") or ()))
                             for p in data.get("paragraphs") or ()),
            sources=tuple(SourceCard(str(s.get("href") or ""), str(s.get("title") or ""), str(s.get("snippet") or ""),
                                     str(s.get("date") or "")) for s in data.get("sources") or ()),
            body_text=str(data.get("body") or ""),
        )


def problem_with(page: PageData, answer_selector: str, blocked_markers: Iterable[str]) -> str:
    """Why the page gave no evidence, or "" when it has an answer or cited sources."""
    if page.found and (any(p.text.strip() for p in page.paragraphs) or page.sources):
        return ""
    lowered = page.body_text.lower()
    for marker in blocked_markers:
        if marker.lower() in lowered:
            return f"the page refused the query (it says {marker!r}): blocked or rate-limited"
    if not page.found:
        return f"no element matches the answer selector {answer_selector!r} on {page.url or 'the page'}"
    return f"the answer element on {page.url or 'the page'} is empty"


def passages_from_page(
    page: PageData, retrieved_at: str, retriever: str, primary_hints: Iterable[str] = ()
) -> list[Passage]:
    """Dated passages: one per cited source card and one per answer paragraph.

    A source card's date is its publication date. An answer paragraph takes the
    URL and date of the first cited source it links to; one that cites nothing
    keeps the answer page's URL and an unknown date (the dates it mentions are
    about events, not about when it was published).
    """
    hints = hint_words(primary_hints)
    cards: dict[str, SourceCard] = {}
    for card in page.sources:
        if card.href.startswith("http") and card.href not in cards:
            cards[card.href] = card
    dates = {href: parse_date_text(card.date_text, retrieved_at) for href, card in cards.items()}

    def passage(text: str, url: str, title: str, published: str | None, rank: int) -> Passage:
        return Passage(
            passage_id=ids.passage_id(url, text),
            text=truncate(" ".join(text.split()), MAX_PASSAGE_CHARS),
            url=truncate(url, 2000),
            title=truncate(" ".join(title.split()), 500),
            published_at=published,
            retrieved_at=retrieved_at,
            retriever=retriever,
            primary=is_official(url) or looks_primary(url, "", hints),
            score=round(max(0.1, 1.0 - 0.05 * rank), 4),  # the page's own order is its relevance ranking
        )

    out: list[Passage] = []
    for rank, paragraph in enumerate(p for p in page.paragraphs if p.text.strip()):
        cited = next((h for h in paragraph.links if h in cards), None)
        if cited is not None:
            out.append(passage(paragraph.text, cited, cards[cited].title, dates[cited], rank))
        else:
            out.append(passage(paragraph.text, page.url, page.title or "answer", None, rank))
    for rank, (href, card) in enumerate(cards.items()):
        text = card.snippet.strip() or card.title.strip()
        if text:
            out.append(passage(text, href, card.title or href, dates[href], rank))
    return out[:MAX_PASSAGES_PER_PAGE]
