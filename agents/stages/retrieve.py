"""Stage 3, retrieve: chronological evidence for a claim set.

:func:`retrieve` runs the sources stage first, then asks the retriever (any
:class:`~agents.evidence.retriever.Retriever`), and orders what comes back
oldest first, noting what is missing or stale. A turn that came with its own
documents (a retrieval-augmented bot's) is checked against those alone: no
sources, no retrieval, no model call.
"""

from __future__ import annotations

import dataclasses

from agents.evidence.passages import assemble_evidence, recency_note
from agents.evidence.retriever import RetrievalRequest, Retriever
from agents.model.prompting import PromptTemplate
from agents.model.runner import ModelRunner
from agents.model.timing import StageClock
from agents.stages.sources import find_sources
from agents.text import truncate
from schemas import ClaimSet, Evidence

MAX_NOTE_CHARS = 500  # Evidence.note's bound


async def retrieve(
    claimset: ClaimSet, retriever: Retriever, model: ModelRunner, sources_prompt: PromptTemplate | None,
    now: str | None = None,
) -> Evidence:
    """Primary sources (no model call when ``sources_prompt`` is None), then passages from the retriever,
    ordered oldest first, with what is missing noted; or the turn's own documents, when it has some."""
    if claimset.grounding:
        return grounded_evidence(claimset)
    if sources_prompt is not None:
        claimset = await find_sources(claimset, model, sources_prompt)
    clock = StageClock("retrieve")
    if not claimset.claims:
        return dataclasses.replace(assemble_evidence(claimset, ()), timings=(clock.stop(),))
    request = RetrievalRequest.from_claimset(claimset, now)
    result = await retriever.retrieve(request)
    notes = [result.reason] if result.reason else []
    recency = recency_note(result.passages, request.today)
    if recency:
        notes.append(recency)
    evidence = assemble_evidence(claimset, result.passages, truncate("; ".join(notes), MAX_NOTE_CHARS))
    return dataclasses.replace(evidence, timings=(clock.stop(),))


def grounded_evidence(claimset: ClaimSet) -> Evidence:
    """The turn's own documents as its evidence. They move from the claim set into the passages, so the
    records downstream carry them once."""
    clock = StageClock("retrieve")
    documents = claimset.grounding
    note = f"checked against the {len(documents)} document(s) the turn came with; nothing else was searched"
    evidence = assemble_evidence(dataclasses.replace(claimset, grounding=()), documents, note)
    return dataclasses.replace(evidence, timings=(clock.stop(),))
