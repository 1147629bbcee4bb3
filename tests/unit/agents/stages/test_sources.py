from __future__ import annotations

from agents.model.prompting import PromptTemplate
from agents.stages.sources import find_sources
from tests.support.records import claimset


async def test_sources_are_asked_once_for_all_claims(scripted) -> None:
    runner, backend = scripted({"sources": '{"sources":[{"kind":"space agency","where":"NASA","reason":"mission records"}]}'})
    found = await find_sources(claimset("Apollo 11 landed in 1969.", "Armstrong walked first."), runner,
                               PromptTemplate.load("sources"))
    assert [(s.kind, s.where) for s in found.sources] == [("space agency", "NASA")]
    assert len(backend.prompts) == 1
    assert "1. Apollo 11 landed in 1969.\n2. Armstrong walked first." in backend.prompts[0].variable
    assert [t.stage for t in found.timings][-1] == "sources"


async def test_a_claim_set_without_claims_costs_no_model_call(scripted) -> None:
    runner, backend = scripted({})
    empty = claimset()
    assert await find_sources(empty, runner, PromptTemplate.load("sources")) is empty
    assert backend.prompts == []
