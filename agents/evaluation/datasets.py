"""Readers for the benchmark files in ../shared/data.

Each reader turns rows into typed cases; a bad line raises :class:`InputError`
naming the file and line, so the CLI can say exactly what to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agents.errors import InputError
from agents.evidence.passages import parse_date, passage_from_row, today
from agents.inputs import read_jsonl
from schemas import DialogueLabel, Label, Passage, Role, Turn

# The turns `halluwatch bench` runs: bundled assistant turns with their evidence.
BENCH_TURNS = Path(__file__).parent / "examples" / "bench_turns.jsonl"


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
            hallucination = DialogueLabel(row["label"]) is DialogueLabel.HALLUCINATION
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
