"""What the sources stage buys knowledge-base retrieval, measured on AVeriTeC claims.

Every question/answer item of the file becomes one knowledge-base document
(its source URL, the question as title, question and answer as text). Each
claim is then searched as the worker searches (:class:`KnowledgeBaseRetriever`,
top 6), once with the primary sources the model proposes for it (the sources
stage, which boosts documents from matching sites) and once without them. A
hit is a document from the claim's own evidence. If the hints do not find the
claim's own evidence more often, a worker that reads only its knowledge base
can skip the model call.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from agents.evaluation.datasets import ClaimCase
from agents.evidence.kb.retriever import KnowledgeBaseRetriever
from agents.evidence.kb.store import KnowledgeBase
from agents.evidence.passages import today
from agents.evidence.retriever import RetrievalRequest
from agents.model.prompting import PromptTemplate
from agents.model.runner import ModelRunner
from agents.stages.segment import claimset_for
from agents.stages.sources import find_sources
from schemas import ClaimSet


@dataclass(frozen=True)
class RetrievalScore:
    found: float  # share of claims with at least one of their own documents in the top k
    precision: float  # mean share of the top k that are the claim's own documents
    mrr: float  # mean reciprocal rank of the first own document (0 when none is in the top k)


@dataclass(frozen=True)
class SourceHintsReport:
    claims: int
    documents: int
    top_k: int
    with_hints: RetrievalScore
    without_hints: RetrievalScore
    claims_with_hints: int  # claims for which the model proposed at least one source
    rankings_changed: int  # claims whose top k (which documents, in which order) differs between the two searches
    scores_changed: int  # claims for which a hint matched a document's site or publisher (its score rose)
    sources_seconds_per_claim: float  # the model's time for the sources call


def knowledge_base_rows(cases: Sequence[ClaimCase]) -> list[tuple[int, dict[str, str]]]:
    """One import row per evidence item: the claims' own passages, every claim's in one base."""
    return [(n, {"text": p.text, "url": p.url, "title": p.title})
            for n, p in enumerate((p for case in cases for p in case.passages if p.url and p.text), start=1)]


def score(rankings: Sequence[Sequence[str]], own: Sequence[set[str]], k: int) -> RetrievalScore:
    """``rankings``: the passage ids found per claim, best first; ``own``: each claim's own passage ids."""
    found = precision = mrr = 0.0
    for ranked, mine in zip(rankings, own):
        top = list(ranked[:k])
        ranks = [i for i, pid in enumerate(top, start=1) if pid in mine]
        found += bool(ranks)
        precision += len(ranks) / k
        mrr += 1 / ranks[0] if ranks else 0.0
    n = max(1, len(rankings))
    return RetrievalScore(round(found / n, 3), round(precision / n, 3), round(mrr / n, 3))


async def evaluate_source_hints(cases: Sequence[ClaimCase], model: ModelRunner, prompt: PromptTemplate,
                                progress: bool = True, top_k: int = 6) -> SourceHintsReport:
    with tempfile.TemporaryDirectory(prefix="halluwatch-hints-") as directory:
        kb = KnowledgeBase(Path(directory) / "kb.sqlite3")
        try:
            report = kb.add(knowledge_base_rows(cases), ingested_at=today())
            retriever = KnowledgeBaseRetriever(kb, top_k=top_k)
            with_hints: list[list[tuple[str, float]]] = []
            without: list[list[tuple[str, float]]] = []
            own: list[set[str]] = []
            seconds = 0.0
            hinted = 0
            for n, case in enumerate(cases, start=1):
                plain = claimset_for(case.turn, (), [case.turn.text])
                started = time.perf_counter()
                sourced = await find_sources(plain, model, prompt)
                seconds += time.perf_counter() - started
                hinted += bool(sourced.sources)
                with_hints.append(await _ranking(retriever, sourced))
                without.append(await _ranking(retriever, replace(sourced, sources=())))
                own.append({p.passage_id for p in case.passages})
                if progress:
                    print(f"\r{n}/{len(cases)} claims", end="", file=sys.stderr, flush=True)
            if progress:
                print(file=sys.stderr)
        finally:
            kb.close()
    ids_with, ids_without = _ids(with_hints), _ids(without)
    return SourceHintsReport(
        claims=len(cases), documents=report.added, top_k=top_k,
        with_hints=score(ids_with, own, top_k), without_hints=score(ids_without, own, top_k),
        claims_with_hints=hinted, rankings_changed=sum(a != b for a, b in zip(ids_with, ids_without)),
        scores_changed=sum(a != b for a, b in zip(with_hints, without)),
        sources_seconds_per_claim=round(seconds / max(1, len(cases)), 3),
    )


async def _ranking(retriever: KnowledgeBaseRetriever, claimset: ClaimSet) -> list[tuple[str, float]]:
    result = await retriever.retrieve(RetrievalRequest.from_claimset(claimset))
    return [(p.passage_id, p.score) for p in result.passages]


def _ids(rankings: list[list[tuple[str, float]]]) -> list[list[str]]:
    return [[pid for pid, _ in ranked] for ranked in rankings]


def format_source_hints(r: SourceHintsReport) -> str:
    def line(name: str, s: RetrievalScore) -> str:
        return f"{name:<26}{s.found:>10.3f}{s.precision:>12.3f}{s.mrr:>8.3f}"

    return "\n".join([
        f"{r.claims} claims searched in a knowledge base of their {r.documents} evidence documents, top {r.top_k}",
        f"{'search':<26}{'own found':>10}{'precision':>12}{'MRR':>8}",
        line("with the model's sources", r.with_hints),
        line("without", r.without_hints),
        f"the model proposed sources for {r.claims_with_hints} claims; they matched a document's site or publisher"
        f" for {r.scores_changed} and changed the top {r.top_k} for {r.rankings_changed};"
        f" the sources call took {r.sources_seconds_per_claim:.2f} s of model time per claim",
    ])
