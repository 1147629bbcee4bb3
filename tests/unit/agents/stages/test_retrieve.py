"""The retrieve stage: a turn that came with its own documents is checked against them alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agents.evidence.passages import GROUNDING, UNTITLED_GROUNDING
from agents.evidence.retriever import RetrievalRequest, RetrievalResult
from agents.model.prompting import PromptTemplate
from agents.model.runner import ModelRunner
from agents.stages.retrieve import retrieve
from agents.stages.segment import claimset_for
from agents.testing.stream_model import stream_model_backend
from schemas import GroundingDocument, Role, Turn

DOCUMENT = GroundingDocument(text="Hartland Swamp is a wetland in Niagara County, New York.", url="https://example.org/swamp",
                             title="Hartland Swamp", published_at="2019-04-01")
TURN = Turn(conversation_id="c", turn_id="2", role=Role.ASSISTANT, text="Hartland Swamp is in Erie County.",
            timestamp=1_700_000_000.0, grounding=(DOCUMENT,))


class Unreachable:
    """A retriever the stage must not ask."""

    name = "unreachable"

    def __init__(self) -> None:
        self.asked: list[RetrievalRequest] = []

    async def retrieve(self, request: RetrievalRequest) -> RetrievalResult:
        self.asked.append(request)
        raise AssertionError("a grounded turn was sent to the retriever")


def test_the_claim_set_carries_the_documents_as_dated_passages() -> None:
    claimset = claimset_for(TURN, (), [TURN.text])
    [passage] = claimset.grounding
    assert (passage.text, passage.url, passage.title, passage.published_at) == (
        DOCUMENT.text, DOCUMENT.url, DOCUMENT.title, DOCUMENT.published_at)
    assert passage.retriever == GROUNDING and passage.retrieved_at == "2023-11-14"  # the day the turn was made
    untitled = replace(TURN, grounding=(GroundingDocument(text="Hartland Swamp is in Niagara County."),))
    assert claimset_for(untitled, (), [TURN.text]).grounding[0].title == UNTITLED_GROUNDING


@pytest.mark.parametrize("sources", [False, True], ids=["plain", "with the sources stage"])
async def test_a_grounded_turn_is_checked_against_its_documents_only(sources: bool) -> None:
    backend = stream_model_backend()
    backend.record_prompts = True
    model = ModelRunner(backend=backend)
    retriever = Unreachable()
    try:
        evidence = await retrieve(claimset_for(TURN, (), [TURN.text]), retriever, model,
                                  PromptTemplate.load("sources") if sources else None)
    finally:
        await model.aclose()
    assert [p.text for p in evidence.passages] == [DOCUMENT.text]
    assert "the 1 document(s) the turn came with" in evidence.note
    assert not retriever.asked and not backend.prompts, "no retrieval and no model call"
    assert evidence.claimset.grounding == (), "carried once, as the evidence"
