"""Per-stage timing: wall time, model time and token counts, recorded on each record."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from agents.model.runner import Generation
from schemas import StageTiming


@dataclass
class StageClock:
    """Started when a stage starts; model generations are added as they finish."""

    stage: str
    started: float = field(default_factory=time.perf_counter)
    model_seconds: float = 0.0
    prompt_seconds: float = 0.0
    prompt_tokens: int = 0
    variable_tokens: int = 0
    generated_tokens: int = 0
    # The cross-encoder's reading: segment, claims beside their turn; verify, claims beside their evidence.
    encoder_seconds: float = 0.0

    def add(self, generation: Generation[object]) -> None:
        self.model_seconds += generation.seconds
        self.prompt_seconds += generation.prompt_seconds
        self.prompt_tokens += generation.prompt_tokens - generation.reused_tokens
        self.variable_tokens += generation.variable_tokens
        self.generated_tokens += generation.generated_tokens

    def stop(self) -> StageTiming:
        return StageTiming(
            stage=self.stage,
            seconds=time.perf_counter() - self.started,
            model_seconds=self.model_seconds,
            prompt_seconds=self.prompt_seconds,
            prompt_tokens=self.prompt_tokens,
            variable_tokens=self.variable_tokens,
            generated_tokens=self.generated_tokens,
            encoder_seconds=self.encoder_seconds,
        )
