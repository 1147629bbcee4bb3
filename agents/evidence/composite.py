"""Several retrievers behind one: queried at once, merged, de-duplicated, chronological.

A retriever that fails (a blocked page, a broken database) gives "no
evidence from this retriever" with its reason in the evidence note; the
others' passages still go through. The selection keeps the evidence for the
claim's date and for the present: the passage nearest the claim date and
the newest passage are always kept before the rest are taken by score.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agents.errors import RetrievalError
from agents.evidence.cache import RetrievalCache
from agents.evidence.passages import chronological, proximity
from agents.evidence.retriever import RetrievalRequest, RetrievalResult, Retriever
from schemas import Passage
from schemas.records import MAX_PASSAGES

log = logging.getLogger("halluwatch.retrieve")
_NON_WORD = re.compile(r"[\W_]+")


def text_key(text: str) -> str:
    """Texts equal up to case, spacing and punctuation are the same passage."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def merge(passages: Iterable[Passage]) -> list[Passage]:
    """One passage per id and per text: the best-scored copy, primary if any copy is, dated if any copy is."""
    by_key: dict[str, Passage] = {}
    alias: dict[str, str] = {}
    for p in passages:
        key = alias.get(p.passage_id) or alias.get(text_key(p.text)) or p.passage_id
        alias[p.passage_id] = alias[text_key(p.text)] = key
        kept = by_key.get(key)
        if kept is None:
            by_key[key] = p
            continue
        best, other = (p, kept) if p.score > kept.score else (kept, p)
        by_key[key] = dataclasses.replace(
            best, primary=best.primary or other.primary, published_at=best.published_at or other.published_at
        )
    return list(by_key.values())


def select(passages: Sequence[Passage], claim_date: str | None, today: str, limit: int = MAX_PASSAGES) -> list[Passage]:
    """At most ``limit`` passages, oldest first, always including the ones nearest the claim date and now."""
    by_score = sorted(passages, key=lambda p: -p.score)
    dated = [p for p in by_score if p.published_at]
    anchors: list[Passage] = []
    if dated:
        anchors.append(max(dated, key=lambda p: p.published_at or ""))
        if claim_date:
            anchors.append(max(dated, key=lambda p: proximity(p.published_at, [claim_date])))
    chosen = {p.passage_id: p for p in anchors[:limit]}
    for p in by_score:
        if len(chosen) >= limit:
            break
        chosen.setdefault(p.passage_id, p)
    return chronological(chosen.values())


@dataclass
class CompositeRetriever:
    retrievers: Sequence[Retriever]
    cache: RetrievalCache | None = None
    limit: int = MAX_PASSAGES
    name: str = "composite"

    async def retrieve(self, request: RetrievalRequest) -> RetrievalResult:
        if self.cache is not None:
            cached = self.cache.get(request)
            if cached is not None:
                return dataclasses.replace(cached, from_cache=True, seconds=0.0)
        started = time.perf_counter()
        results = await asyncio.gather(*(self._one(r, request) for r in self.retrievers))
        passages = select(merge(p for r in results for p in r.passages), request.claim_date, request.today, self.limit)
        reasons = [f"no evidence from {r.retriever}: {r.reason}" for r in results if r.reason and not r.passages]
        result = RetrievalResult(self.name, tuple(passages), "; ".join(reasons), time.perf_counter() - started)
        # A failed look (timeout, blocked page) is not cached: the next request should try again.
        if self.cache is not None and not any(r.failed for r in results):
            self.cache.put(request, result)
        return result

    async def _one(self, retriever: Retriever, request: RetrievalRequest) -> RetrievalResult:
        try:
            return await retriever.retrieve(request)
        except RetrievalError as exc:
            log.warning("retriever %s failed: %s", retriever.name, exc)
            return RetrievalResult(retriever.name, (), str(exc))
