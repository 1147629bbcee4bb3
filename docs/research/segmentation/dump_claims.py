"""Claims (and skipped spans) per assistant turn from replayed segment answers, as JSON lines."""
import asyncio, json, sys
from pathlib import Path
from agents.evaluation.segmentation import dialogue_turns
from agents.model.runner import ModelRunner
from agents.stages.segment import segment
from agents.testing.recorded_backend import RecordedBackend
from stream.build import build_pipeline
from stream.settings import Settings

async def main(path, answers, out):
    s = Settings()
    p = build_pipeline(s, model=ModelRunner(s.model, backend=RecordedBackend.load(Path(answers))))
    with open(out, "w") as f:
        async with p.model:
            for item in dialogue_turns(Path(path)):
                cs = await segment(item.turn, item.context, p.model, p.prompts.segment, p.parser)
                f.write(json.dumps({"conv": item.turn.conversation_id, "turn": item.turn.turn_id, "text": item.turn.text,
                                    "ctx": [c.text for c in item.context[-3:]],
                                    "claims": [c.text for c in cs.claims],
                                    "skipped": [[s.text, s.reason.value] for s in cs.skipped]}) + "\n")
asyncio.run(main(*sys.argv[1:4]))
