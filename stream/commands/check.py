"""``halluwatch check``: run the stages once on one utterance and print what they found."""

from __future__ import annotations

import argparse
import time

from agents.errors import InputError
from agents.evidence.passages import grounding_documents, parse_date, read_passages
from agents.inputs import read_context, read_jsonl
from agents.stages.pipeline import CheckResult
from schemas import GroundingDocument, Role, SchemaViolation, Turn, from_dict, to_dict
from schemas.records import MAX_GROUNDING
from stream.build import build_pipeline
from stream.commands.common import dump_json, readable_text
from stream.settings import Settings


async def run_check(args: argparse.Namespace, settings: Settings) -> int:
    text = readable_text(args.text)
    date = parse_date(args.date) if args.date else None
    if args.date and date is None:
        raise InputError(f"--date {args.date!r} is not a date: use YYYY-MM-DD")
    if args.evidence and args.grounding:
        raise InputError("--evidence and --grounding both give the evidence: --grounding for the documents the bot"
                         " answered from (checked as a grounded turn), --evidence for passages found elsewhere")
    passages = read_passages(args.evidence) if args.evidence else []
    grounding = ()
    if args.grounding:
        grounding = grounding_documents([row for _, row in read_jsonl(args.grounding)], str(args.grounding))
        if len(grounding) > MAX_GROUNDING:
            raise InputError(f"{args.grounding} holds {len(grounding)} documents; a turn carries at most"
                             f" {MAX_GROUNDING}: keep the ones the bot answered from")
        for n, document in enumerate(grounding, start=1):
            try:  # the bounds a worker holds a published turn's documents to (the text's length)
                from_dict(GroundingDocument, to_dict(document))
            except SchemaViolation as exc:
                raise InputError(f"{args.grounding}: document {n}: {exc}; shorten it to the part the bot"
                                 " answered from") from None
    context = read_context(args.context) if args.context else []
    pipeline = build_pipeline(settings)
    async with pipeline.model:
        turn = Turn(conversation_id="cli", turn_id="1", role=Role.ASSISTANT, text=text, timestamp=time.time(),
                    claim_date=date, grounding=grounding)
        result = await pipeline.check(turn, context, passages)
    print(dump_json(to_dict(result)) if args.json else format_check(result))
    return 0


def format_check(result: CheckResult) -> str:
    verdict = result.verdict
    lines = [f"Claims ({len(result.claimset.claims)}):"]
    restates = {c.index: c.restates for c in result.claimset.claims}
    for v in verdict.claim_verdicts:
        again = restates.get(v.claim_index)
        lines.append(f"  {v.claim_index + 1}. {v.claim_text}" + (f" (says claim {again + 1} again)" if again is not None else ""))
        lines.append(f"     -> {v.label.value.upper()} (confidence {v.confidence:.2f}{', closed-book' if v.closed_book else ''}): {v.justification}")
        if v.abstained and v.abstained_from is not None:
            lines.append(f"        abstained from {v.abstained_from.value}: selective score {v.selective_score:.2f} is below the threshold")
        if v.sufficiency is not None:
            lines.append(f"        evidence {v.sufficiency.label.value} (p={v.sufficiency.probability:.2f}): {v.sufficiency.reason}")
        if v.fit is not None and v.fit.weakest:
            lines.append(f"        evidence fit: mean token log-prob {v.fit.mean_logprob:.2f}, least expected word"
                         f" \"{v.fit.weakest}\" ({v.fit.min_logprob:.1f}), contradiction margin {v.fit.contradiction:.1f}")
        for note in v.signals:
            lines.append(f"        signal: {note}")
    for s in result.claimset.skipped:
        lines.append(f"  skipped ({s.reason.value}): {s.text}")
    lines.append(f"Turn verdict: {verdict.label.value.upper()}")
    if verdict.evidence.note:
        lines.append(f"Evidence: {verdict.evidence.note}")
    c = result.correction
    if c is not None:
        lines.append(f"Correction: {c.justification}")
        lines.append(f"Corrected text: {c.corrected_text}")
        s = c.score
        lines.append(
            f"FinGrAct: {s.total}/7 (detection {s.error_detection}, correction {s.correction}, links {s.links});"
            f" rounds: {len(c.rounds)}"
        )
    timings = result.claimset.timings + verdict.timings + (c.timings if c else ())
    lines.append("Timings: " + ", ".join(
        f"{t.stage} {t.seconds:.2f}s (model {t.model_seconds:.2f}s"
        + (f", encoder {t.encoder_seconds:.2f}s)" if t.encoder_seconds else ")") for t in timings))
    return "\n".join(lines)
