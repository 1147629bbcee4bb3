"""A judge that answers from a script: :class:`~agents.model.judge.LetterReader` for tests, no model needed."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class ScriptedLetters:
    """Gives ``answer(prompt)``'s probabilities for A, B and C (as log-probabilities) and keeps every prompt and
    the thread that read it."""

    answer: Callable[[str], tuple[float, float, float]]
    prompts: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)

    def load(self) -> None:
        pass  # nothing to load

    def letters(self, prompt: str) -> tuple[float, float, float]:
        self.prompts.append(prompt)
        self.threads.append(threading.current_thread().name)
        first, second, third = (math.log(p) for p in self.answer(prompt))
        return first, second, third
