"""Readers for the benchmark files in ../shared/data.

Each reader turns rows into typed cases; a bad line raises :class:`InputError`
naming the file and line, so the CLI can say exactly what to fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agents.errors import InputError
from agents.evidence.passages import GROUNDING, parse_date, passage_from_row, today
from agents.inputs import read_jsonl
from schemas import ContextLine, DialogueLabel, Label, Passage, Role, Turn

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


@dataclass(frozen=True)
class GroundedCase:
    """One labelled assistant turn of a knowledge-grounded dialogue (HaluEval QA or dialogue).

    ``context`` is the dialogue before the turn, ``passages`` the knowledge the answer must rest on,
    and ``row`` the source row's index: both turns of a row share it, so they fall on one side of the
    even (fit) / odd (held-out) split.
    """

    case_id: str
    row: int
    context: tuple[ContextLine, ...]
    turn: Turn
    passages: tuple[Passage, ...]
    hallucination: bool


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


# HaluEval dialogue history: "[Human]: ... [Assistant]: ..." in one string.
_SPEAKER = re.compile(r"\[(Human|Assistant|User)\]:\s*", re.IGNORECASE)


def parse_dialogue_history(history: str) -> list[ContextLine]:
    """ "[Human]: hi [Assistant]: hello" as context lines; text before the first marker is dropped."""
    parts = _SPEAKER.split(history)
    lines = []
    for speaker, text in zip(parts[1::2], parts[2::2]):
        text = text.strip()
        if text:
            role = Role.ASSISTANT if speaker.lower() == "assistant" else Role.USER
            lines.append(ContextLine(role=role, text=text[:2000]))
    return lines


def read_halueval(path: Path, limit: int | None = None) -> list[GroundedCase]:
    """HaluEval QA rows (knowledge, question, right_answer, hallucinated_answer) or dialogue rows
    (knowledge, dialogue_history, right_response, hallucinated_response): two turns per row, the right
    one factual and the hallucinated one not, each after the same question or history."""
    cases: list[GroundedCase] = []
    for n, row in read_jsonl(path):
        index = len(cases) // 2
        try:
            knowledge = str(row["knowledge"]).strip()
            if "question" in row:
                context = [ContextLine(role=Role.USER, text=str(row["question"]).strip())]
                answers = (str(row["right_answer"]), str(row["hallucinated_answer"]))
            else:
                context = parse_dialogue_history(str(row["dialogue_history"]))
                answers = (str(row["right_response"]), str(row["hallucinated_response"]))
        except KeyError as exc:
            raise InputError(
                f"{path}:{n}: not a HaluEval row (missing {exc}): QA rows need knowledge, question, right_answer and"
                " hallucinated_answer; dialogue rows knowledge, dialogue_history, right_response and hallucinated_response"
            ) from None
        row_id = str(row.get("id") or f"halueval-{n}")
        # The knowledge is what the answer had to rest on: the turn's own document, as a grounded turn's.
        passage = passage_from_row({"text": knowledge, "url": "", "title": "knowledge"}, GROUNDING, today(), f"{path}:{n}")
        for answer, hallucination in zip(answers, (False, True)):
            case_id = f"{row_id}/{DialogueLabel.of(hallucination)}"
            turn = Turn(conversation_id=case_id, turn_id="answer", role=Role.ASSISTANT, text=answer.strip() or "(empty)")
            cases.append(GroundedCase(case_id, index, tuple(context), turn, (passage,), hallucination))
        if limit is not None and len(cases) >= 2 * limit:
            break
    return cases
