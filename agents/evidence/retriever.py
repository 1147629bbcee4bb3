"""The retriever interface: what every evidence source is asked, and how it answers.

Every retriever answers a :class:`RetrievalRequest` (the atomic claims, the
date the claims were made, the primary sources from the sources stage and
the date of "now") with a :class:`RetrievalResult`: passages, or no passages
and the reason.

Retrievers behind this interface: :class:`PassageIndex` (passages loaded
from JSONL files, ranked by shared words), the local knowledge base
(:mod:`agents.evidence.kb.retriever`), the Selenium web retriever
(:mod:`agents.evidence.web.retriever`) and the composite that queries several at once
(:mod:`agents.evidence.composite`).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from agents.evidence.passages import read_passages, today
from agents.text import content_words, coverage
from schemas import Claim, ClaimSet, Passage, PrimarySource
from schemas.records import MAX_PASSAGES

MIN_SCORE = 0.2
_SPACE = re.compile(r"\s+")


@dataclasses.dataclass(frozen=True)
class RetrievalRequest:
    """What every retriever is asked: the claims, when they were made, where to look first, and today."""

    claims: tuple[Claim, ...]
    claim_date: str | None
    sources: tuple[PrimarySource, ...]
    today: str

    @classmethod
    def from_claimset(cls, claimset: ClaimSet, now: str | None = None) -> RetrievalRequest:
        return cls(claims=claimset.claims, claim_date=claimset.claim_date, sources=claimset.sources,
                   today=now or today())

    def normalized_query(self) -> str:
        """The claims lower-cased with collapsed spaces and no end punctuation: equal for trivially different texts."""
        return " | ".join(_SPACE.sub(" ", c.text.lower()).strip(" .!?") for c in self.claims)

    def cache_key(self) -> tuple[str, str]:
        return self.normalized_query(), self.claim_date or "unknown"


@dataclasses.dataclass(frozen=True)
class RetrievalResult:
    """A retriever's answer: passages, or none and why (a failure, a blocked page, nothing matched)."""

    retriever: str
    passages: tuple[Passage, ...]
    reason: str = ""
    seconds: float = 0.0
    from_cache: bool = False

    @property
    def failed(self) -> bool:
        """True when the retriever could not look (as opposed to looking and finding nothing)."""
        return bool(self.reason) and not self.passages and not self.reason.startswith("nothing matched")


class Retriever(Protocol):
    name: str

    async def retrieve(self, request: RetrievalRequest) -> RetrievalResult: ...


def nothing_matched(name: str) -> str:
    return f"nothing matched in {name}"


@dataclasses.dataclass
class GivenPassages:
    """The passages a caller already has (``halluwatch check --evidence``, a benchmark's evidence): all of
    them, as given, whatever the claims; nothing is searched."""

    passages: Sequence[Passage]
    name: str = "given passages"

    async def retrieve(self, request: RetrievalRequest) -> RetrievalResult:
        return RetrievalResult(self.name, tuple(self.passages), "", 0.0)


@dataclasses.dataclass
class PassageIndex:
    """An in-memory retriever over a fixed set of passages."""

    passages: Sequence[Passage]
    top_k: int = 6
    name: str = "passages"

    @classmethod
    def from_files(cls, paths: Iterable[Path], top_k: int = 6) -> PassageIndex:
        passages: list[Passage] = []
        for path in paths:
            passages.extend(read_passages(path, retriever="passages"))
        return cls(passages=passages, top_k=top_k)

    async def retrieve(self, request: RetrievalRequest) -> RetrievalResult:
        started = time.perf_counter()
        scored: dict[str, Passage] = {}
        for claim in request.claims:
            words = content_words(claim.text)
            ranked = sorted(
                ((coverage(words, content_words(p.text)), p) for p in self.passages), key=lambda sp: -sp[0]
            )
            for score, passage in ranked[: self.top_k]:
                if score >= MIN_SCORE and score > scored.get(passage.passage_id, passage).score:
                    scored[passage.passage_id] = dataclasses.replace(passage, score=round(score, 4))
        found = tuple(sorted(scored.values(), key=lambda p: -p.score)[:MAX_PASSAGES])
        return RetrievalResult(self.name, found, "" if found else nothing_matched(self.name),
                               time.perf_counter() - started)
