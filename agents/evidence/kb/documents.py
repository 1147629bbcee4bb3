"""The knowledge base's records: stored documents, search hits, import rows and reports.

Import rows are validated here (:meth:`NewDocument.from_row`), apart from the
SQLite store, so the file readers (:mod:`agents.evidence.kb.importer`) and the
store share one definition of a valid document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.evidence.passages import parse_date
from agents.text import truncate
from schemas import Passage, ids
from schemas.records import MAX_PASSAGE_CHARS


@dataclass(frozen=True)
class KbDocument:
    doc_id: int
    passage_id: str
    text: str
    url: str
    title: str
    publisher: str
    published_at: str | None
    ingested_at: str
    primary: bool
    superseded_by: int | None
    superseded_at: str | None
    supersede_reason: str

    def passage(self, retrieved_at: str, score: float, primary: bool | None = None, retriever: str = "kb") -> Passage:
        return Passage(
            passage_id=self.passage_id,
            text=truncate(self.text, MAX_PASSAGE_CHARS),
            url=truncate(self.url, 2000),
            title=truncate(self.title, 500),
            published_at=self.published_at,
            retrieved_at=retrieved_at,
            retriever=retriever,
            primary=self.primary if primary is None else primary,
            score=score,
        )


@dataclass(frozen=True)
class KbHit:
    document: KbDocument
    score: float  # what results are ordered by
    relevance: float  # 0..1: BM25 (normalised over the candidates) and share of query words present
    proximity: float  # 0..1: closeness of the published date to the claim's date or to the present
    primary: bool  # flagged at import, an official (government, international) site, or named by the sources stage


@dataclass(frozen=True)
class BadRow:
    line: int
    reason: str


@dataclass(frozen=True)
class ImportReport:
    added: int
    duplicates: int
    bad: tuple[BadRow, ...]


@dataclass(frozen=True)
class KbStats:
    path: Path
    documents: int
    current: int
    superseded: int
    primary: int
    undated: int
    oldest: str | None
    newest: str | None
    last_ingested: str | None
    size_bytes: int


_TRUE = {"1", "true", "yes", "y", "on"}
_FALSE = {"0", "false", "no", "n", "off", ""}


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value if value is not None else "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"primary={value!r} is not true or false")


def _date_field(row: Mapping[str, Any], name: str) -> str | None:
    raw = row.get(name)
    if raw in (None, "", "unknown"):
        return None
    parsed = parse_date(raw)
    if parsed is None:
        raise ValueError(f"{name}={raw!r} is not a date (use YYYY-MM-DD or unknown)")
    return parsed


@dataclass(frozen=True)
class NewDocument:
    """A validated import row."""

    text: str
    url: str
    title: str
    publisher: str
    published_at: str | None
    ingested_at: str | None  # None: the import date
    primary: bool

    @property
    def passage_id(self) -> str:
        # The same id as a passage with this URL and text from any other retriever, so merging de-duplicates.
        return ids.passage_id(self.url, self.text)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> NewDocument:
        """Raises ValueError naming the field when the row is unusable."""
        text = str(row.get("text") or "").strip()
        if not text:
            raise ValueError("no text")
        published = _date_field(row, "published_at")
        ingested = _date_field(row, "ingested_at")
        if published and ingested and ingested < published:
            raise ValueError(f"ingested_at {ingested} is before published_at {published}")
        return cls(
            text=text,
            url=str(row.get("url") or "").strip(),
            title=str(row.get("title") or "").strip(),
            publisher=str(row.get("publisher") or "").strip(),
            published_at=published,
            ingested_at=ingested,
            primary=_flag(row.get("primary", False)),
        )

    @classmethod
    def from_passage(cls, passage: Passage, publisher: str = "") -> NewDocument:
        return cls(text=passage.text, url=passage.url, title=passage.title, publisher=publisher,
                   published_at=passage.published_at, ingested_at=None, primary=passage.primary)


Row = tuple[int, Mapping[str, Any] | str]  # (line number, the row, or why the line is unreadable)
