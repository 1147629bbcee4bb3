"""Claims and skipped spans of every assistant turn, from replayed segment answers, as JSON lines.

    python dump_claims.py DIALOGUES.jsonl ANSWERS.jsonl OUT.jsonl
"""

import asyncio
import json
import sys
from pathlib import Path

from agents.evaluation.segmentation import dialogue_turns
from agents.model.runner import ModelRunner
from agents.stages.segment import segment
from agents.testing.recorded_backend import RecordedBackend
from stream.build import build_pipeline
from stream.settings import Settings


async def main(path: str, answers: str, out: str) -> None:
    settings = Settings()
    pipeline = build_pipeline(settings, model=ModelRunner(settings.model, backend=RecordedBackend.load(Path(answers))))
    with open(out, "w") as f:
        async with pipeline.model:
            for item in dialogue_turns(Path(path)):
                claimset = await segment(item.turn, item.context, pipeline.model, pipeline.prompts.segment,
                                         pipeline.parser, pipeline.nli)
                f.write(json.dumps({
                    "conv": item.turn.conversation_id, "turn": item.turn.turn_id, "text": item.turn.text,
                    "ctx": [c.text for c in item.context[-3:]],
                    "claims": [c.text for c in claimset.claims],
                    "skipped": [[s.text, s.reason.value] for s in claimset.skipped],
                }) + "\n")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
