"""Add the judge's letters to saved judgements of claims checked against retrieved evidence (session 28).

The Gemma model's judgements do not change when the judge reads a claim too: only the judge's letters in
``EvidenceFit`` (``judge`` and ``judge_each``) are missing. This reads each saved file, asks the judge
(agents.model.judge) about every judged claim beside its evidence, the way the verify stage does, and writes the
file back, so `halluwatch train-verifier --judgements docs/results --judge qwen-1.5b` can fit the judge's
calibration. A turn checked against its own documents, or without evidence, gets no letters: the judge does not
read those. The shipped calibration without a judge ignores the letters.

    pip install -e '.[judge]'
    python docs/research/qwen-profile/add_judge_scores.py qwen-1.5b docs/results/averitec-judgements.json \
        docs/results/atomic-judgements.json    # about 1.5 hours on 2 cores (each passage alone too, session 35)
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

from agents.evaluation.harness import JudgedTurn, load_judgements, save_judgements
from agents.evaluation.provenance import judge_digest
from agents.model.judge import JudgeReading, JudgeRunner, judge_runner
from agents.stages.verify import judge_reads, read_judge, with_judge_letters
from stream.settings import Settings

# A case's whole turn is mostly its one claim again: the judge reads a prompt the same way every time, so a
# reading already made is used again.
Key = tuple[tuple[str, ...], tuple[str, ...]]


async def with_letters(turn: JudgedTurn, judge: JudgeRunner, read: dict[Key, list[JudgeReading]]) -> JudgedTurn:
    if not judge_reads(turn.evidence):
        # Letters a file kept from when the judge read such claims too (closed-book ones, until session 32) go.
        unread = tuple(dataclasses.replace(j, fit=with_judge_letters(j.fit, None)) for j in turn.judgements)
        return dataclasses.replace(turn, judgements=unread)
    key = (tuple(c.text for c in turn.evidence.claimset.claims), tuple(p.text for p in turn.evidence.passages))
    if key not in read:
        read[key] = await read_judge(turn.evidence, judge)
    letters = read[key]
    judgements = tuple(dataclasses.replace(j, fit=with_judge_letters(j.fit, reading))
                       for j, reading in zip(turn.judgements, letters))
    return dataclasses.replace(turn, judgements=judgements)


async def main(name: str, paths: list[Path]) -> None:
    settings = Settings.from_env()
    judge = judge_runner(name, settings.model.cache_dir, settings.model.n_threads)
    for path in paths:
        run = load_judgements(path)
        read: dict[Key, list[JudgeReading]] = {}
        for case in run.cases:
            case.judged = [await with_letters(t, judge, read) for t in case.judged]
            case.whole = [await with_letters(t, judge, read) for t in case.whole]
        # What the judge read, so `halluwatch eval` and `train-verifier` warn once its prompts change.
        run.judge_digest = judge_digest(run.cases, judge.templates)
        save_judgements(run, path)
        print(f"{path}: {len(run.cases)} rows read by {judge.name}", flush=True)
    judge.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], [Path(p) for p in sys.argv[2:]]))
