"""How to load and run the model: one frozen settings record, built from :class:`stream.settings.Settings`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

EMBEDDED_MODEL = "embedded Gemma 3 270M Q4_K_M"


@dataclass(frozen=True)
class ModelConfig:
    """How to load and run the model. ``model_path=None`` means the embedded Gemma 3 270M."""

    model_path: Path | None = None
    n_ctx: int = 4096
    n_threads: int = max(1, min(os.cpu_count() or 1, 8))
    n_gpu_layers: int = 0
    # The evidence cross-encoder's own threads (agents.model.nli); it reads after the model has answered.
    encoder_threads: int = 2
    temperature: float = 0.0
    seed: int = 0
    prefix_reuse: bool = True
    cache_dir: Path = Path.home() / ".cache" / "halluwatch"

    @property
    def name(self) -> str:
        """Which model this is, for the record of what a result was made with."""
        return EMBEDDED_MODEL if self.model_path is None else Path(self.model_path).name
