"""Prompt templates kept as text files in ``agents/model/prompts``.

A template file has two parts separated by a line ``=== input ===``:
the static part (instructions and worked examples, the same on every call,
so the runner keeps it warm in the KV cache) and the variable part, a
``str.format`` template filled per call. Only the variable part is formatted,
so the static part may contain JSON braces freely.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agents.model.backend import Prompt

PROMPT_DIR = Path(__file__).parent / "prompts"
SEPARATOR = "=== input ===\n"


@dataclass(frozen=True)
class PromptTemplate:
    family: str
    static: str
    variable: str

    @classmethod
    def load(cls, name: str, directory: Path = PROMPT_DIR) -> PromptTemplate:
        text = (directory / f"{name}.txt").read_text(encoding="utf-8")
        if SEPARATOR not in text:
            raise ValueError(f"prompt {name}.txt lacks the '{SEPARATOR.strip()}' line")
        static, variable = text.split(SEPARATOR, 1)
        return cls(family=name, static=static, variable=variable)

    def render(self, **values: object) -> Prompt:
        return Prompt(family=self.family, static=self.static, variable=self.variable.format(**values))

    def prefix(self) -> Prompt:
        """The static part alone: what a runner evaluates once and keeps for every call of this family."""
        return Prompt(family=self.family, static=self.static, variable="")


def numbered(items: list[str]) -> str:
    """Items as a numbered list, one a line ("1. ..."), the way the prompts list claims."""
    return "\n".join(f"{i}. {text}" for i, text in enumerate(items, start=1))
