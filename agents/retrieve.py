"""Stage 3, retrieve: chronological evidence for a claim set.

A retriever takes the claim set (with its primary sources from the sources
stage) and returns passages; :func:`retrieve` runs the sources stage first,
then the retriever, and orders what comes back oldest first.

:class:`PassageIndex` is the simplest retriever: passages loaded from JSONL
files (the ``--evidence`` format), ranked by how many of a claim's words they
share. The demo and the tests use it; the knowledge base and the web
retriever plug in behind the same protocol.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from agents.datasets import read_passages
from agents.evidence import assemble_evidence
from agents.llm import ModelRunner
from agents.prompting import PromptTemplate
from agents.sources import find_sources
from agents.text import content_words, coverage
from agents.timing import StageClock
from schemas import ClaimSet, Evidence, Passage
from schemas.records import MAX_PASSAGES

MIN_SCORE = 0.2


class Retriever(Protocol):
    name: str

    async def search(self, claimset: ClaimSet) -> list[Passage]: ...


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

    async def search(self, claimset: ClaimSet) -> list[Passage]:
        scored: dict[str, Passage] = {}
        for claim in claimset.claims:
            words = content_words(claim.text)
            ranked = sorted(
                ((coverage(words, content_words(p.text)), p) for p in self.passages), key=lambda sp: -sp[0]
            )
            for score, passage in ranked[: self.top_k]:
                if score >= MIN_SCORE and score > scored.get(passage.passage_id, passage).score:
                    scored[passage.passage_id] = dataclasses.replace(passage, score=round(score, 4))
        return sorted(scored.values(), key=lambda p: -p.score)[:MAX_PASSAGES]


async def retrieve(
    claimset: ClaimSet, retriever: Retriever, model: ModelRunner, sources_prompt: PromptTemplate
) -> Evidence:
    """Primary sources, then passages from the retriever, ordered oldest first."""
    claimset = await find_sources(claimset, model, sources_prompt)
    clock = StageClock("retrieve")
    passages = await retriever.search(claimset) if claimset.claims else []
    note = "" if passages or not claimset.claims else f"no passage from {retriever.name} matched the claims"
    evidence = assemble_evidence(claimset, passages, note)
    return dataclasses.replace(evidence, timings=(clock.stop(),))
