"""Readers for the benchmark files in ../shared/data and for halluwatch's own JSONL inputs.

Each reader turns rows into typed cases; a bad line raises :class:`InputError`
naming the file and line, so the CLI can say exactly what to fix.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agents.errors import InputError
from agents.evidence import parse_date, passage_from_row
from schemas import ContextLine, Label, Passage, Role, Turn


@dataclass(frozen=True)
class ClaimCase:
    """An AVeriTeC claim with its own question/answer evidence and gold label."""

    case_id: str
    turn: Turn
    passages: tuple[Passage, ...]
    label: Label


@dataclass(frozen=True)
class DialogueCase:
    """A DiaHalu dialogue; ``hallucination`` is the gold label of the whole dialogue."""

    case_id: str
    turns: tuple[Turn, ...]
    hallucination: bool
    hallucinated_turns: tuple[str, ...]


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-empty line; a clear error for unreadable input."""
    try:
        handle = Path(path).open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}; check the path and permissions") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise InputError(f"{path}:{number}: not a JSON object; the file must be JSONL (one object a line)") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
            yield number, obj


def today() -> str:
    return dt.date.today().isoformat()


def read_passages(path: Path, retriever: str = "file") -> list[Passage]:
    """Evidence JSONL: one passage a line with text, url, title, published_at."""
    retrieved = today()
    return [passage_from_row(row, retriever, retrieved, f"{path}:{n}") for n, row in read_jsonl(path)]


def read_context(path: Path) -> list[ContextLine]:
    """Dialogue context JSONL: one earlier turn a line with role and text."""
    lines = []
    for n, row in read_jsonl(path):
        try:
            lines.append(ContextLine(role=Role(row["role"]), text=str(row["text"])))
        except (KeyError, ValueError):
            raise InputError(f"{path}:{n}: each context line needs role (user|assistant) and text") from None
    return lines


def read_averitec(path: Path, limit: int | None = None) -> list[ClaimCase]:
    cases: list[ClaimCase] = []
    for n, row in read_jsonl(path):
        try:
            label = Label(row["label"])
            claim = str(row["claim"])
            evidence = list(row.get("evidence") or [])
        except (KeyError, ValueError):
            raise InputError(f"{path}:{n}: not an AVeriTeC row (needs claim, label true|false|unverifiable, evidence)") from None
        passages = []
        for item in evidence:
            answer = str(item.get("answer") or "").strip()
            explanation = str(item.get("boolean_explanation") or "").strip()
            text = f"{item.get('question', '')} {answer}" + (f" ({explanation})" if explanation else "")
            row_passage = {"text": text.strip(), "url": item.get("source_url") or "", "title": item.get("question") or ""}
            # AVeriTeC's question/answer pairs carry no publication date: they stay "unknown".
            passages.append(passage_from_row(row_passage, "averitec", today(), f"{path}:{n}"))
        turn = Turn(
            conversation_id=str(row.get("id", f"averitec-{n}")),
            turn_id="claim",
            role=Role.ASSISTANT,
            text=claim,
            bot=str(row.get("speaker") or ""),
            claim_date=parse_date(row.get("claim_date")),
        )
        cases.append(ClaimCase(case_id=turn.conversation_id, turn=turn, passages=tuple(passages), label=label))
        if limit is not None and len(cases) >= limit:
            break
    return cases


def read_diahalu(path: Path, limit: int | None = None) -> list[DialogueCase]:
    cases: list[DialogueCase] = []
    for n, row in read_jsonl(path):
        try:
            case_id = str(row["id"])
            turns = tuple(
                Turn(
                    conversation_id=case_id,
                    turn_id=str(t.get("speaker") or i),
                    role=Role(t["role"]),
                    text=str(t["text"]).strip() or "(empty)",
                )
                for i, t in enumerate(row["turns"])
            )
            hallucination = row["label"] == "hallucination"
        except (KeyError, ValueError, TypeError):
            raise InputError(f"{path}:{n}: not a DiaHalu row (needs id, label, turns with role and text)") from None
        cases.append(
            DialogueCase(
                case_id=case_id,
                turns=turns,
                hallucination=hallucination,
                hallucinated_turns=tuple(row.get("hallucinated_turns") or ()),
            )
        )
        if limit is not None and len(cases) >= limit:
            break
    return cases
