"""Add the evidence cross-encoder's scores to judgements saved before it existed (session 21).

The Gemma model's judgements do not change when the cross-encoder is added: only the two new
``EvidenceFit`` values are missing. This reads each saved file, scores every judged claim against its
evidence with the cross-encoder (a few minutes for all the files, against hours to run Gemma again) and
writes the file back with ``nli_model`` set, so ``halluwatch train-verifier --judgements docs/results``
can refit the calibration.

    python docs/research/nli-evidence/add_scores.py docs/results/*-judgements.json \
        docs/research/grounded-paraphrase/more-cases-judgements.json
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

from agents.evaluation.harness import JudgedTurn, load_judgements, save_judgements
from agents.model.nli import NliRunner
from agents.stages.verify import read_pairs, with_pairs


async def with_scores(turn: JudgedTurn, nli: NliRunner) -> JudgedTurn:
    pairs = await read_pairs(turn.evidence, nli)
    judgements = tuple(dataclasses.replace(j, fit=with_pairs(j.fit, pair)) for j, pair in zip(turn.judgements, pairs))
    return dataclasses.replace(turn, judgements=judgements)


async def main(paths: list[Path]) -> None:
    nli = NliRunner()
    for path in paths:
        run = load_judgements(path)
        for case in run.cases:
            case.judged = [await with_scores(t, nli) for t in case.judged]
            case.whole = [await with_scores(t, nli) for t in case.whole]
        run.nli_model = nli.name
        save_judgements(run, path)
        print(f"{path}: {len(run.cases)} rows scored", flush=True)
    nli.close()


if __name__ == "__main__":
    asyncio.run(main([Path(p) for p in sys.argv[1:]]))
