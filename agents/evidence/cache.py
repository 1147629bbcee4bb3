"""A time-window cache for retrieval requests, keyed by the normalised claims and the claim date.

The same claims are checked again and again (a bot repeating itself, a
replay, redelivered messages); a web query costs seconds, so an identical
request within the window is answered from memory. Hits and misses are
counted on the cache and reported to ``on_lookup`` (the worker's metrics).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from agents.evidence.retriever import RetrievalRequest, RetrievalResult


@dataclass
class RetrievalCache:
    ttl_seconds: float
    max_entries: int = 2048
    clock: Callable[[], float] = time.monotonic
    on_lookup: Callable[[bool], None] | None = None  # called with hit=True/False on every look-up
    hits: int = 0
    misses: int = 0
    _entries: OrderedDict[tuple[str, str], tuple[float, RetrievalResult]] = field(default_factory=OrderedDict)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def get(self, request: RetrievalRequest) -> RetrievalResult | None:
        key = request.cache_key()
        entry = self._entries.get(key)
        if entry is not None and self.clock() - entry[0] <= self.ttl_seconds:
            self._entries.move_to_end(key)
            self._count("hit")
            return entry[1]
        if entry is not None:
            del self._entries[key]
        self._count("miss")
        return None

    def put(self, request: RetrievalRequest, result: RetrievalResult) -> None:
        if self.ttl_seconds <= 0:
            return
        self._entries[request.cache_key()] = (self.clock(), result)
        self._entries.move_to_end(request.cache_key())
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def _count(self, outcome: str) -> None:
        if outcome == "hit":
            self.hits += 1
        else:
            self.misses += 1
        if self.on_lookup is not None:
            self.on_lookup(outcome == "hit")
