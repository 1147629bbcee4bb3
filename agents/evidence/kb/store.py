"""The local knowledge base: dated documents in SQLite with full-text search (FTS5, BM25).

What it keeps, per document: text, URL, title, publisher, published date
(or unknown), the date it was ingested, whether it is a primary source, and
a "superseded by" link. Nothing is ever deleted: when fresher evidence wins
(:mod:`agents.stages.kb_update`), the old document is marked superseded by the new
one on that date, so ``as_of`` searches can still say what the knowledge
base knew on any past day, and :meth:`KnowledgeBase.history` shows the chain.

Searches rank by BM25 relevance and by how close a document's date is to the
claim's date or to the present (evidence should cover both), and boost
primary sources. All methods are blocking; async callers run them in a
thread (:mod:`agents.evidence.kb.retriever`). Each thread gets its own connection,
because a sqlite3 connection must not be shared between threads.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

import orjson

from agents.errors import KnowledgeBaseError
from agents.evidence.kb.documents import BadRow, ImportReport, KbDocument, KbHit, KbStats, NewDocument, Row
from agents.evidence.passages import proximity
from agents.evidence.primary_sources import hint_words, is_official, looks_primary
from agents.text import content_words, coverage, word_set

KB_FILE_NAME = "kb.sqlite3"
# Candidates fetched by BM25 before re-ranking by date and source; enough that the re-rank has choice.
CANDIDATES = 60
POOL_FACTOR = 2
PRIMARY_BOOST = 1.3
# A query word in more than this share of the documents (and more than COMMON_MIN_DOCS) is too common to
# select candidates by; see KnowledgeBase.selective_query.
COMMON_FRACTION = 0.02
COMMON_MIN_DOCS = 500
KEEP_TERMS = 2
MAX_RARE_TERMS = 4
_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id INTEGER PRIMARY KEY,
    passage_id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    url TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    publisher TEXT NOT NULL DEFAULT '',
    published_at TEXT,
    ingested_at TEXT NOT NULL,
    is_primary INTEGER NOT NULL DEFAULT 0,
    superseded_by INTEGER REFERENCES documents(doc_id),
    superseded_at TEXT,
    supersede_reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS documents_url ON documents(url);
CREATE INDEX IF NOT EXISTS documents_superseded_by ON documents(superseded_by);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
    title, text, publisher, content='documents', content_rowid='doc_id', tokenize='porter unicode61'
);
-- Only inserts touch the index: indexed columns never change after insert, and rows are never deleted.
CREATE TRIGGER IF NOT EXISTS documents_ai AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts(rowid, title, text, publisher) VALUES (new.doc_id, new.title, new.text, new.publisher);
END;
"""
_COLUMNS = ("doc_id, passage_id, text, url, title, publisher, published_at, ingested_at, is_primary,"
            " superseded_by, superseded_at, supersede_reason")


def _quoted(term: str) -> str:
    return '"' + term.replace('"', "") + '"'


def fts_query(text: str) -> str:
    """An FTS5 query matching any content word of ``text`` (each quoted, so no word is read as syntax)."""
    return " OR ".join(_quoted(t) for t in sorted(content_words(text)))


class KnowledgeBase:
    """One SQLite file; safe to use from several threads (one connection each)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # one writer at a time inside this process
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._conn()
            conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise KnowledgeBaseError(
                f"cannot open the knowledge base {self.path}: {exc}; check HALLUWATCH_KB / HALLUWATCH_DATA_DIR"
                " points to a writable place"
            ) from None

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # Used only by the thread that opened it; check_same_thread=False lets close() run from any thread.
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    # -- writing --

    def add(self, rows: Iterable[Row], ingested_at: str) -> ImportReport:
        """Import rows in ONE transaction: bad rows are skipped and reported; any error leaves nothing written."""
        added = duplicates = 0
        bad: list[BadRow] = []
        conn = self._conn()
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for line, row in rows:
                    if isinstance(row, str):
                        bad.append(BadRow(line, row))
                        continue
                    try:
                        doc = NewDocument.from_row(row)
                    except ValueError as exc:
                        bad.append(BadRow(line, str(exc)))
                        continue
                    if self._insert(conn, doc, ingested_at) is None:
                        duplicates += 1
                    else:
                        added += 1
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return ImportReport(added=added, duplicates=duplicates, bad=tuple(bad))

    def _insert(self, conn: sqlite3.Connection, doc: NewDocument, ingested_at: str) -> int | None:
        """The new doc_id, or None when a document with the same URL and text is already stored."""
        cursor = conn.execute(
            "INSERT OR IGNORE INTO documents (passage_id, text, url, title, publisher, published_at, ingested_at,"
            " is_primary) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (doc.passage_id, doc.text, doc.url, doc.title, doc.publisher, doc.published_at,
             doc.ingested_at or ingested_at, int(doc.primary)),
        )
        return cursor.lastrowid if cursor.rowcount == 1 else None

    def supersede(self, old_id: int, new: NewDocument, reason: str, when: str) -> KbDocument:
        """Record ``new`` (or find it, if stored) and mark ``old_id`` superseded by it; nothing is deleted."""
        conn = self._conn()
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                old = self._get(conn, old_id)
                if old is None:
                    raise KnowledgeBaseError(f"no document {old_id} in {self.path}")
                new_id = self._insert(conn, new, when)
                if new_id is None:
                    found = self._by_passage(conn, new.passage_id)
                    assert found is not None  # the insert was ignored because this row exists
                    new_id = found.doc_id
                if new_id == old_id:
                    raise KnowledgeBaseError(f"document {old_id} cannot supersede itself")
                conn.execute(
                    "UPDATE documents SET superseded_by = ?, superseded_at = ?, supersede_reason = ?"
                    " WHERE doc_id = ? AND superseded_by IS NULL",
                    (new_id, when, reason[:500], old_id),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        result = self.get(new_id)
        assert result is not None
        return result

    # -- reading --

    def _get(self, conn: sqlite3.Connection, doc_id: int) -> KbDocument | None:
        row = conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        return _document(row) if row else None

    def _by_passage(self, conn: sqlite3.Connection, passage_id: str) -> KbDocument | None:
        row = conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE passage_id = ?", (passage_id,)).fetchone()
        return _document(row) if row else None

    def get(self, doc_id: int) -> KbDocument | None:
        return self._get(self._conn(), doc_id)

    def by_passage_id(self, passage_id: str) -> KbDocument | None:
        return self._by_passage(self._conn(), passage_id)

    def find(self, url_or_id: str) -> list[KbDocument]:
        """Documents with this URL, or the document with this id (a number) or passage id."""
        conn = self._conn()
        if url_or_id.isdigit():
            doc = self._get(conn, int(url_or_id))
            return [doc] if doc else []
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM documents WHERE url = ? OR passage_id = ? ORDER BY doc_id", (url_or_id, url_or_id)
        ).fetchall()
        return [_document(r) for r in rows]

    def history(self, url_or_id: str) -> list[list[KbDocument]]:
        """For each chain the document(s) belong to: oldest first, each superseded by the next."""
        conn = self._conn()
        chains: list[list[KbDocument]] = []
        seen: set[int] = set()
        for doc in self.find(url_or_id):
            if doc.doc_id in seen:
                continue
            first = doc
            while True:  # walk back to the start of the chain
                row = conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE superseded_by = ?",
                                   (first.doc_id,)).fetchone()
                if row is None or row["doc_id"] in seen:
                    break
                first = _document(row)
                seen.add(first.doc_id)
            chain = [first]
            while chain[-1].superseded_by is not None and len(chain) < 1000:
                nxt = self._get(conn, chain[-1].superseded_by)
                if nxt is None:
                    break
                chain.append(nxt)
            seen.update(d.doc_id for d in chain)
            chains.append(chain)
        return chains

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        as_of: str | None = None,
        claim_date: str | None = None,
        today: str | None = None,
        primary_hints: Iterable[str] = (),
        min_coverage: float = 0.0,
    ) -> list[KbHit]:
        """Best documents for ``query``: relevance x date proximity x primary boost.

        ``as_of`` searches what the knowledge base knew at the end of that day: documents
        ingested by then and not yet superseded then; "the present" is then ``as_of`` itself.
        Without it, only current (not superseded) documents are searched.
        """
        match = self.selective_query(query)
        if not match:
            return []
        present = as_of or today or dt.date.today().isoformat()
        references = [present] + ([claim_date] if claim_date else [])
        if as_of:
            where = ("d.ingested_at <= :as_of AND (d.superseded_at IS NULL OR d.superseded_at > :as_of)"
                     " AND (d.published_at IS NULL OR d.published_at <= :as_of)")
        else:
            where = "d.superseded_by IS NULL"
        candidates = max(CANDIDATES, limit * 4)
        conn = self._conn()
        # Ranking inside the full-text index alone, then reading the few best documents, is several times
        # faster than joining every match to its document before sorting (which carries each matching
        # row's text through the sort). The pool is larger than the candidates so that superseded or
        # not-yet-ingested documents filtered out below still leave enough.
        ranked = conn.execute(
            "SELECT rowid, bm25(documents_fts, 2.0, 1.0, 0.5) AS rank FROM documents_fts"
            " WHERE documents_fts MATCH :match ORDER BY rank LIMIT :pool",
            {"match": match, "pool": candidates * POOL_FACTOR},
        ).fetchall()
        if not ranked:
            return []
        rank_of = {r["rowid"]: r["rank"] for r in ranked}
        rows = conn.execute(
            f"SELECT {', '.join('d.' + c.strip() for c in _COLUMNS.split(','))} FROM documents AS d"
            f" WHERE d.doc_id IN (SELECT value FROM json_each(:ids)) AND {where}",
            {"ids": orjson.dumps(list(rank_of)).decode(), "as_of": as_of},
        ).fetchall()
        rows = sorted(rows, key=lambda r: rank_of[r["doc_id"]])[:candidates]
        if not rows:
            return []
        words = content_words(query)
        hints = hint_words(primary_hints)
        best_rank = max(-rank_of[r["doc_id"]] for r in rows) or 1.0
        hits: list[KbHit] = []
        for row in rows:
            doc = _document(row)
            share = coverage(words, word_set(f"{doc.title} {doc.text}"))
            if share < min_coverage:
                continue
            relevance = 0.5 * (-rank_of[doc.doc_id] / best_rank) + 0.5 * share
            near = proximity(doc.published_at, references)
            primary = doc.primary or is_official(doc.url) or looks_primary(doc.url, doc.publisher, hints)
            score = relevance * (0.75 + 0.25 * near) * (PRIMARY_BOOST if primary else 1.0)
            hits.append(KbHit(doc, round(score, 4), round(relevance, 4), round(near, 4), primary))
        hits.sort(key=lambda h: (-h.score, h.document.doc_id))
        return hits[:limit]

    def selective_query(self, query: str) -> str:
        """``fts_query`` without the words many documents contain (all of them common: the rarest together).

        BM25 scores every document that matches any term; a word in most documents makes that
        nearly every document (100,000 scored to keep 60) while adding almost nothing to the
        ranking. Such words still count in the coverage part of the relevance.
        """
        terms = sorted(content_words(query))
        conn = self._conn()
        total = conn.execute("SELECT coalesce(max(doc_id), 0) FROM documents").fetchone()[0]
        common = max(COMMON_MIN_DOCS, int(total * COMMON_FRACTION))
        if total <= common or len(terms) <= KEEP_TERMS:
            return " OR ".join(_quoted(t) for t in terms)
        counted = []
        for term in terms:
            # Counting stops at the threshold, so a common word costs a bounded scan.
            df = conn.execute("SELECT count(*) FROM (SELECT 1 FROM documents_fts WHERE documents_fts MATCH ? LIMIT ?)",
                              (_quoted(term), common + 1)).fetchone()[0]
            counted.append((df, term))
        counted.sort()
        # The rarest few words select the candidates: each further word adds its matches to score, and
        # the rarest carry the most evidence of which document a claim is about.
        rare = [t for df, t in counted if df <= common][:MAX_RARE_TERMS]
        if rare:
            return " OR ".join(_quoted(t) for t in rare)
        # Every word is common: documents holding the rarest ones together are the candidates.
        return " AND ".join(_quoted(t) for _, t in counted[:KEEP_TERMS])

    def stats(self) -> KbStats:
        row = self._conn().execute(
            "SELECT count(*) AS n, sum(superseded_by IS NULL) AS current, sum(superseded_by IS NOT NULL) AS old,"
            " sum(is_primary) AS prim, sum(published_at IS NULL) AS undated, min(published_at) AS oldest,"
            " max(published_at) AS newest, max(ingested_at) AS ingested FROM documents"
        ).fetchone()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return KbStats(
            path=self.path, documents=row["n"], current=row["current"] or 0, superseded=row["old"] or 0,
            primary=row["prim"] or 0, undated=row["undated"] or 0, oldest=row["oldest"], newest=row["newest"],
            last_ingested=row["ingested"], size_bytes=size,
        )


def _document(row: sqlite3.Row) -> KbDocument:
    return KbDocument(
        doc_id=row["doc_id"], passage_id=row["passage_id"], text=row["text"], url=row["url"], title=row["title"],
        publisher=row["publisher"], published_at=row["published_at"], ingested_at=row["ingested_at"],
        primary=bool(row["is_primary"]), superseded_by=row["superseded_by"], superseded_at=row["superseded_at"],
        supersede_reason=row["supersede_reason"],
    )
