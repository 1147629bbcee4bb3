"""Stage 2, sources: the primary authoritative sources that could verify a claim set.

Retrieval uses them to direct its queries toward original data (agencies,
registries, the organisation itself) instead of commentary about it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from agents.model.prompting import PromptTemplate, numbered
from agents.model.runner import ModelRunner
from agents.model.timing import StageClock
from agents.stages.instructions import claim_as_read
from schemas import ClaimSet, PrimarySource


@dataclass(frozen=True)
class SourceSuggestion:
    kind: str = field(metadata={"min_length": 1, "max_length": 60})
    where: str = field(metadata={"min_length": 1, "max_length": 80})
    reason: str = field(metadata={"max_length": 90})


@dataclass(frozen=True)
class SourcesOutput:
    sources: tuple[SourceSuggestion, ...] = field(metadata={"max_items": 3})


async def find_sources(claimset: ClaimSet, model: ModelRunner, prompt: PromptTemplate) -> ClaimSet:
    """The claim set with ``sources`` filled in (unchanged when it has no claims)."""
    if not claimset.claims:
        return claimset
    clock = StageClock("sources")
    generation = await model.generate(
        prompt.render(claims=numbered([claim_as_read(c) for c in claimset.claims])), SourcesOutput
    )
    clock.add(generation)
    found = tuple(PrimarySource(kind=s.kind, where=s.where, reason=s.reason) for s in generation.output.sources)
    return dataclasses.replace(claimset, sources=found, timings=claimset.timings + (clock.stop(),))
