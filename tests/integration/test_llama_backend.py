"""One copy of the weights for every prompt family, and each family's prefix still reused (real model)."""

from __future__ import annotations

from agents.model.config import ModelConfig
from agents.model.runner import ModelRunner
from agents.stages.pipeline import Prompts
from agents.stages.segment import SegmentOutput
from agents.stages.verify import ask_verdicts


async def test_two_prompt_families_share_one_model_and_each_keeps_its_prefix(real_model: ModelRunner) -> None:
    prompts = Prompts.load()
    segment = prompts.segment.render(context="(start of conversation)", text="Lisbon is the capital of Portugal.")
    verify = prompts.verify.with_evidence.render(evidence="[1] undated Lisbon is Portugal's capital.", claims="1. Lisbon is in Spain.")

    first_segment = await real_model.generate(segment, SegmentOutput, 100)
    first_verify = await ask_verdicts(real_model, verify, 1)
    # Each family comes back after the other one ran: its prefix is restored, not read again.
    again_segment = await real_model.generate(segment, SegmentOutput, 100)
    again_verify = await ask_verdicts(real_model, verify, 1)

    footprint = await real_model.footprint()
    assert footprint is not None and footprint.model_copies == 1
    assert footprint.prefix_families >= 2 and footprint.prefix_cache_bytes > 0
    assert 0 < again_segment.reused_tokens < again_segment.prompt_tokens
    assert 0 < again_verify.reused_tokens < again_verify.prompt_tokens
    assert again_segment.reused_tokens != again_verify.reused_tokens  # two different prefixes
    # With the prefix restored, a call evaluates exactly its variable part: no token is wasted.
    for again in (again_segment, again_verify):
        assert again.prompt_tokens - again.reused_tokens == again.variable_tokens > 0
    # A restored prefix is the same cache, so the answers do not change.
    assert again_segment.output == first_segment.output
    assert again_verify.output == first_verify.output
    assert again_verify.label_scores == first_verify.label_scores


async def test_a_warmed_up_family_pays_only_for_its_own_text_on_its_first_call() -> None:
    runner = ModelRunner(ModelConfig(n_threads=2))  # fresh: no family kept yet
    try:
        prompts = Prompts.load()
        warmed = await runner.warm([prompts.segment.prefix(), prompts.verify.with_evidence.prefix()])
        assert warmed > 0
        assert await runner.warm([prompts.segment.prefix()]) == 0, "a kept prefix is not read again"
        first = await runner.generate(prompts.segment.render(context="(start of conversation)",
                                                             text="Lisbon is the capital of Portugal."), SegmentOutput, 100)
        assert first.reused_tokens > 0
        assert first.prompt_tokens - first.reused_tokens == first.variable_tokens
    finally:
        await runner.aclose()
