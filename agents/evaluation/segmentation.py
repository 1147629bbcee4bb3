"""How well segmentation makes claims that stand alone, measured over the turns of a dialogue file.

For every assistant turn of a DiaHalu or HaluEval file, with the dialogue
before it as context (or every claim of an AVeriTeC file, as its own turn),
it runs the segment stage and counts what a checker cannot use: claims that
begin with an unresolved pronoun (an "it" that stands for nothing, as in "It
takes years to ...", is counted apart), near-duplicate pairs within a turn,
factual turns that yield no claim (they would pass unchecked), and claims
made of the user's words rather than the reply's.
:func:`claim_drift` compares the claims of saved judgements with what the
stage makes of the same turns today.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from agents.errors import InputError
from agents.evaluation.datasets import read_averitec, read_diahalu, read_halueval
from agents.evaluation.harness import CaseResult, Progress
from agents.inputs import read_jsonl
from agents.model.judge import JudgeRunner
from agents.model.nli import NliRunner
from agents.model.prompting import PromptTemplate
from agents.model.runner import ModelRunner
from agents.parsing import SentenceParser
from agents.stages.restatements import group_of, shares_a_fact
from agents.stages.segment import classify_sentence, invented_values, render_context, segment
from agents.stages.standalone import (
    PERSON_PRONOUNS,
    is_user_text,
    leading_pronoun,
    near_duplicate,
    opens_with_placeholder_it,
    person_referent,
)
from agents.text import answer_part, sentences
from schemas import ClaimSet, ContextLine, Role, SkipReason, Turn

# What the issue asks of segmentation (shares of claims or factual turns).
TARGETS = {"unresolved_share": 0.03, "duplicate_pairs": 0, "factual_without_claim_share": 0.02, "user_text_claims": 0}
# Near-duplicates are counted with the stage's own rule, which has already dropped every pair it finds, so
# that count is 0 by construction. Pairs that may say one fact in other words (restatements.shares_a_fact) and
# were not grouped are counted apart as possible restatements, to be read by hand: many are distinct claims.


TurnKey = tuple[str, str]  # (conversation_id, turn_id)


@dataclass(frozen=True)
class TurnInContext:
    turn: Turn
    context: tuple[ContextLine, ...]


@dataclass
class SegmentationReport:
    file: str
    turns: int = 0
    factual_turns: int = 0
    claims: int = 0
    unresolved: int = 0
    # Of those, "he"/"she" for a person the dialogue never names ("He looked at his report card ..."): the
    # stage skips such claims (see unnamed_person), so these are the ones that got past it.
    never_named: int = 0
    # Sentences and claims the stage skipped as being about a person the conversation never names.
    unnamed_person: int = 0
    placeholder_it: int = 0  # claims opening with an "it" that stands for nothing: not counted as unresolved
    duplicate_pairs: int = 0
    # Pairs the stage marks as one fact in two wordings (agents.stages.restatements): both judged, named once.
    grouped_restatements: int = 0
    possible_restatements: int = 0  # left ungrouped
    factual_without_claim: int = 0
    user_text_claims: int = 0
    # Claims the model proposed with a number or name that neither the turn nor its context has: the stage
    # drops them (see agents.stages.segment.invented_values); counted to show how often the model does it.
    invented_values: int = 0
    # Claims the model proposed that the cross-encoder reads as saying the opposite of the turn: dropped (see
    # agents.stages.faithfulness).
    contradicting: int = 0
    seconds: float = 0.0
    examples: dict[str, list[str]] = field(default_factory=dict)  # a few of each problem, to read

    @property
    def claims_per_turn(self) -> float:
        return self.claims / self.turns if self.turns else 0.0

    @property
    def unresolved_share(self) -> float:
        return self.unresolved / self.claims if self.claims else 0.0

    @property
    def factual_without_claim_share(self) -> float:
        return self.factual_without_claim / self.factual_turns if self.factual_turns else 0.0

    def note(self, problem: str, text: str) -> None:
        found = self.examples.setdefault(problem, [])
        if len(found) < 5:
            found.append(text[:200])


def dialogue_turns(path: Path, limit: int | None = None) -> list[TurnInContext]:
    """The assistant turns of a DiaHalu or HaluEval file, each with the dialogue before it; an AVeriTeC
    file's claims as turns without context, the way the eval harness checks them."""
    first = next(read_jsonl(path), None)
    if first is None:
        raise InputError(f"{path} is empty: give a DiaHalu or HaluEval JSONL file")
    row = first[1]
    if "knowledge" in row:
        return [TurnInContext(c.turn, c.context) for c in read_halueval(path, limit)]
    if "claim" in row:
        return [TurnInContext(c.turn, ()) for c in read_averitec(path, limit)]
    if "turns" in row:
        found = []
        for case in read_diahalu(path, limit):
            context: list[ContextLine] = []
            for turn in case.turns:
                if turn.role is Role.ASSISTANT:
                    found.append(TurnInContext(turn, tuple(context)))
                context.append(ContextLine(role=turn.role, text=turn.text[:2000]))
        return found
    raise InputError(f"{path}:1: neither a DiaHalu row (turns), a HaluEval row (knowledge) nor an AVeriTeC row (claim)")


def score_turn(report: SegmentationReport, item: TurnInContext, claimset: ClaimSet, parser: SentenceParser) -> None:
    texts = [c.text for c in claimset.claims]
    report.turns += 1
    report.claims += len(texts)
    # A sentence about "he" or "she" in a conversation that names no one is skipped with its reason, like an
    # opinion: nothing in it can be looked up. Counted apart below, so the skip is seen, not hidden.
    unnamed = {span.text for span in claimset.skipped if span.reason is SkipReason.UNNAMED_PERSON}
    report.unnamed_person += len(unnamed)
    if unnamed:
        report.note("skipped: about a person the conversation never names", next(iter(unnamed)))
    factual = any(classify_sentence(s) is None and s not in unnamed for s in sentences(item.turn.text))
    report.factual_turns += factual
    if factual and not texts:
        report.factual_without_claim += 1
        report.note("factual turn without a claim", item.turn.text)
    for text in texts:
        if opens_with_placeholder_it(text, parser):
            report.placeholder_it += 1  # "It takes years to ...": nothing to resolve
            report.note("placeholder it (not counted)", text)
        elif (pronoun := leading_pronoun(text)) is not None:
            report.unresolved += 1
            dialogue = [line.text for line in item.context] + [item.turn.text]
            if pronoun.lower() in PERSON_PRONOUNS and person_referent(dialogue, parser) is None:
                report.never_named += 1
                report.note("unresolved: a person the dialogue never names", text)
            else:
                report.note("unresolved pronoun", text)
        # A bare answer's claim carries the user's question on purpose; only the reply's part counts here.
        if is_user_text(answer_part(text, item.context), item.turn.text, item.context):
            report.user_text_claims += 1
            report.note("user text", text)
    for first, second in combinations(claimset.claims, 2):
        a, b = first.text, second.text
        if near_duplicate(a, b):
            report.duplicate_pairs += 1
            report.note("duplicate pair", f"{a} | {b}")
        elif group_of(first) == group_of(second):
            report.grouped_restatements += 1
            report.note("restatement grouped (both judged, reported once)", f"{a} | {b}")
        elif shares_a_fact(a, b):
            report.possible_restatements += 1
            report.note("possible restatement (read by hand)", f"{a} | {b}")
    said = f"{item.turn.text}\n{render_context(item.context)}"
    for span in claimset.skipped:
        if span.reason is SkipReason.UNGROUNDED and invented_values(span.text, said):
            report.invented_values += 1
            report.note("dropped: a number or name the turn does not have", span.text)
        if span.reason is SkipReason.CONTRADICTS_TURN:
            report.contradicting += 1
            report.note("dropped: says the opposite of the turn", f"{span.text} | turn: {item.turn.text}")


async def evaluate_segmentation(
    items: Sequence[TurnInContext],
    model: ModelRunner,
    prompt: PromptTemplate,
    parser: SentenceParser,
    nli: NliRunner,
    name: str,
    show_progress: bool = True,
    claims_out: dict[TurnKey, list[str]] | None = None,
    judge: JudgeRunner | None = None,
) -> SegmentationReport:
    """The report over ``items``; ``claims_out``, when given, receives each turn's claims (for :func:`claim_drift`);
    ``judge``: the optional judge, which reads possible restatements the cross-encoder left apart."""
    report = SegmentationReport(file=name)
    progress = Progress(len(items), "segmentation") if show_progress else None
    started = time.perf_counter()
    for item in items:
        claimset = await segment(item.turn, item.context, model, prompt, parser, nli, judge=judge)
        score_turn(report, item, claimset, parser)
        if claims_out is not None:
            claims_out[(item.turn.conversation_id, item.turn.turn_id)] = [c.text for c in claimset.claims]
        if progress:
            progress.step()
    report.seconds = time.perf_counter() - started
    return report


@dataclass(frozen=True)
class DriftedTurn:
    """A saved turn whose claims segmentation now makes differently."""

    case_id: str
    key: TurnKey
    saved: list[str]
    now: list[str]


def drifted_turns(cases: Sequence[CaseResult], made: Mapping[TurnKey, list[str]]) -> list[DriftedTurn]:
    """The saved turns whose claims differ from the claims segmentation ``made`` of them now (see
    ``evaluate_segmentation``'s ``claims_out``), in the saved order; a turn ``made`` lacks (a failed row, a
    ``--limit``) is not compared."""
    found = []
    for case in cases:
        for turn in case.judged:
            claimset = turn.evidence.claimset
            key = (claimset.conversation_id, claimset.turn_id)
            saved = [c.text for c in claimset.claims]
            if key in made and made[key] != saved:
                found.append(DriftedTurn(case.case_id, key, saved, made[key]))
    return found


def claim_drift(cases: Sequence[CaseResult], made: Mapping[TurnKey, list[str]]) -> list[str]:
    """The turns of :func:`drifted_turns`, one line each."""
    return [f"{d.key[0]} {d.key[1]}: saved {d.saved} now {d.now}" for d in drifted_turns(cases, made)]


def format_segmentation(r: SegmentationReport) -> str:
    def flag(ok: bool) -> str:
        return "meets target" if ok else "MISSES target"

    lines = [
        f"segmentation of {r.file}: {r.turns} assistant turns ({r.factual_turns} with a factual sentence), {r.seconds:.0f}s",
        f"claims per turn:                 {r.claims_per_turn:.2f} ({r.claims} claims)",
        f"unresolved leading pronoun:      {r.unresolved} = {r.unresolved_share:.1%} of claims"
        f" ({flag(r.unresolved_share <= TARGETS['unresolved_share'])}: <= 3%)",
        f"  of which a person never named: {r.never_named} (\"he\" with no name anywhere before it)",
        f"placeholder 'it', not counted:   {r.placeholder_it} (\"It takes years to ...\")",
        f"skipped, a person never named:   {r.unnamed_person} sentences or claims (\"He looked at his report card\""
        " with no one named: no claim, and not counted as factual)",
        f"near-duplicate pairs:            {r.duplicate_pairs} by the stage's own rule, which drops them"
        " (so 0 says nothing of the target: 0)",
        f"  restatements grouped:          {r.grouped_restatements} pairs (read as one fact by the cross-encoder,"
        " or by the judge: both judged, corrections and alerts name them once)",
        f"  possible restatements left:    {r.possible_restatements} = {r.possible_restatements / max(r.turns, 1):.3f}"
        " per turn (ungrouped; same names and numbers, most words shared; read them, some are distinct claims)",
        f"factual turns without a claim:   {r.factual_without_claim} = {r.factual_without_claim_share:.1%}"
        f" ({flag(r.factual_without_claim_share <= TARGETS['factual_without_claim_share'])}: <= 2%)",
        f"claims made of the user's words: {r.user_text_claims} ({flag(r.user_text_claims == 0)}: 0)",
        f"proposed with a made-up value:   {r.invented_values} dropped (a number or name neither the turn nor its"
        " context has)",
        f"proposed against the turn:       {r.contradicting} dropped (read as saying the opposite of the turn)",
    ]
    for problem, texts in r.examples.items():
        lines.append(f"\n{problem}, e.g.:")
        lines += [f"  - {t}" for t in texts]
    return "\n".join(lines)
