"""What a worker keeps of a conversation between its turns: the last few lines, and who was named before them.

The segment stage reads the remembered lines to make claims stand alone. A dialogue can go on about one
person for many turns after naming them once ("Einstein ..." in the first question, "He advocated ..." ten
turns later), longer than it is worth keeping whole lines. So when a line no longer fits, the people it
names are kept, and "he" or "she" can still find them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from agents.parsing import SentenceParser
from agents.stages.standalone import people_named
from schemas import ContextLine, Role
from schemas.records import MAX_CONTEXT_TURNS

# A dialogue can call the same person "he" for many turns after naming them once: the worker keeps this
# many turns of each conversation whole, and "he" or "she" may point back to a name in any of them.
REMEMBERED_TURNS = MAX_CONTEXT_TURNS
# People named in older turns, most recent last; a pronoun only ever takes the last, the rest are kept so a
# name mentioned again moves back to the end.
REMEMBERED_PEOPLE = 8


def add_people(people: Sequence[str], named: Sequence[str]) -> tuple[str, ...]:
    """``people`` with ``named`` after them, each name once, the most recently named last."""
    merged = [p for p in people if p not in named]
    for name in named:
        if name in merged:
            merged.remove(name)
        merged.append(name)
    return tuple(merged[-REMEMBERED_PEOPLE:])


def people_before(lines: Sequence[ContextLine], parser: SentenceParser) -> tuple[str, ...]:
    """The people named in ``lines`` (older than the remembered window), most recent last."""
    people: tuple[str, ...] = ()
    for line in lines:
        people = add_people(people, people_named(line.text, parser))
    return people


@dataclass(frozen=True)
class ConversationMemory:
    lines: tuple[ContextLine, ...] = ()
    people: tuple[str, ...] = ()  # named in lines no longer kept, most recent last

    def remember(self, line: ContextLine, parser: SentenceParser) -> ConversationMemory:
        """The memory after ``line``; parses the lines that drop out (CPU work: call it off the event loop)."""
        lines = (*self.lines, line)
        dropped = lines[:-REMEMBERED_TURNS]
        people = add_people(self.people, people_before(dropped, parser)) if dropped else self.people
        return ConversationMemory(lines=lines[-REMEMBERED_TURNS:], people=people)

    def to_bytes(self) -> bytes:
        return orjson.dumps({"lines": [{"role": c.role.value, "text": c.text} for c in self.lines],
                             "people": list(self.people)})

    @classmethod
    def from_bytes(cls, data: bytes | None) -> ConversationMemory:
        """Read what :meth:`to_bytes` stored; also the bare list of lines that earlier versions stored, so a worker upgraded in place keeps its conversations."""
        stored = orjson.loads(data or b"{}")
        lines = stored if isinstance(stored, list) else stored.get("lines", [])
        people = () if isinstance(stored, list) else tuple(stored.get("people", ()))
        return cls(lines=tuple(ContextLine(role=Role(c["role"]), text=c["text"]) for c in lines), people=people)
