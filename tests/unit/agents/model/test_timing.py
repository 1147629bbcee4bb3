from __future__ import annotations

from agents.model.runner import Generation
from agents.model.timing import StageClock


def generation(seconds: float, prompt_tokens: int, reused: int, generated: int) -> Generation[object]:
    return Generation(output=None, text="{}", label_probs=(), prompt_tokens=prompt_tokens, reused_tokens=reused,
                      generated_tokens=generated, prompt_seconds=seconds / 2, seconds=seconds, attempts=1)


def test_clock_sums_model_time_and_counts_only_the_tokens_evaluated() -> None:
    clock = StageClock("verify")
    clock.add(generation(1.0, prompt_tokens=500, reused=450, generated=20))
    clock.add(generation(0.5, prompt_tokens=300, reused=0, generated=10))
    timing = clock.stop()
    assert (timing.stage, timing.model_seconds, timing.prompt_seconds) == ("verify", 1.5, 0.75)
    assert (timing.prompt_tokens, timing.generated_tokens) == (350, 30), "reused prefix tokens are not evaluated"
    assert timing.seconds >= 0
