"""A judge that answers from a script: :class:`~agents.model.judge.LetterReader` for tests, no model needed."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agents.model.backend import Prompt


@dataclass
class ScriptedLetters:
    """Gives ``answer(prompt text)``'s probabilities for A, B and C (as log-probabilities) and keeps every prompt
    and the thread that read it."""

    answer: Callable[[str], tuple[float, float, float]]
    prompts: list[Prompt] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    warmed: list[str] = field(default_factory=list)  # the static parts load() was asked to read ahead

    def load(self, statics: Sequence[str] = ()) -> None:
        self.warmed.extend(statics)  # nothing to load

    def letters(self, prompt: Prompt) -> tuple[float, float, float]:
        self.prompts.append(prompt)
        self.threads.append(threading.current_thread().name)
        first, second, third = (math.log(p) for p in self.answer(prompt.text))
        return first, second, third
