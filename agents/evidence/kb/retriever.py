"""The knowledge base behind the retriever interface: one search per atomic claim, off the event loop."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import dataclass

from agents.errors import RetrievalError
from agents.evidence.kb.store import KnowledgeBase
from agents.evidence.retriever import RetrievalRequest, RetrievalResult, nothing_matched
from schemas import Passage

# Share of a claim's content words a document must contain: below it BM25 matches on one common word.
MIN_COVERAGE = 0.2


@dataclass
class KnowledgeBaseRetriever:
    kb: KnowledgeBase
    top_k: int = 6
    name: str = "kb"

    async def retrieve(self, request: RetrievalRequest) -> RetrievalResult:
        started = time.perf_counter()
        try:
            passages = await asyncio.to_thread(self._search, request)
        except sqlite3.Error as exc:
            raise RetrievalError(f"knowledge base {self.kb.path}: {exc}") from exc
        return RetrievalResult(self.name, passages, "" if passages else nothing_matched("the knowledge base"),
                               time.perf_counter() - started)

    def _search(self, request: RetrievalRequest) -> tuple[Passage, ...]:
        hints = [f"{s.kind} {s.where}" for s in request.sources]
        best: dict[str, Passage] = {}
        for claim in request.claims:
            hits = self.kb.search(claim.text, limit=self.top_k, claim_date=request.claim_date, today=request.today,
                                  primary_hints=hints, min_coverage=MIN_COVERAGE)
            for hit in hits:
                passage = hit.document.passage(request.today, hit.score, primary=hit.primary, retriever=self.name)
                if passage.score > best.get(passage.passage_id, passage).score or passage.passage_id not in best:
                    best[passage.passage_id] = passage
        return tuple(sorted(best.values(), key=lambda p: -p.score))
