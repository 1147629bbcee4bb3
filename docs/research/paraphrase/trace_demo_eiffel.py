"""Why the demo flags "The Eiffel Tower was finished in 1889" when its source says "completed in 1889".

The demo's Eiffel turn through the worker's own stages (segment with the user's question as context,
knowledge-base retrieval from the demo evidence, verify), without a broker, once with and once without the
user's question. Research for issue #13; prints the passages and each claim's scores.

    python docs/research/paraphrase/trace_demo_eiffel.py

Seen (session 13): without the question the claim is true (0.663 true / 0.230 false); with it, false (0.374 /
0.486). With the question, "Eiffel Tower" counts as the user's words, so the reply's own words are "finished"
and "1889"; "finished" is not in the passage ("completed"), the reply's word support drops from 0.75 to 0.5 and the combined
score tips to false. The model's own score is "false" (0.884) either way. Session 14, on a CPU with AMX where
the weights load without llama.cpp's repacked layouts: 0.346 / 0.520 with the question (same verdicts).
Counting synonyms as support fixes it and costs held-out rows elsewhere: word_support_variants.py. Under the
split calibration that ships since (a fit for retrieved evidence apart from the grounded one) it is true
(0.563 / 0.353 with the question).
"""

import asyncio
import dataclasses
import tempfile
from pathlib import Path

from agents.stages.retrieve import retrieve
from agents.stages.segment import segment
from agents.stages.verify import verify
from schemas import ContextLine, Role, Turn
from stream.build import build_pipeline
from stream.retrieval import build_retrieval
from stream.settings import Settings

ROOT = Path(__file__).resolve().parents[3]
QUESTION = ContextLine(role=Role.USER, text="I'm planning a trip to see the Eiffel Tower. Where is it?")
REPLY = "The Eiffel Tower is in Berlin and was finished in 1889."


async def main(calibration: Path | None = None) -> None:
    """``calibration``: a verifier fit to use instead of the shipped one (word_support_variants.py)."""
    folder = Path(tempfile.mkdtemp())
    settings = dataclasses.replace(Settings(), data_dir=folder, kb_path=folder / "kb.sqlite3",
                                   calibration_path=calibration,
                                   evidence_files=(ROOT / "stream" / "examples" / "demo_evidence.jsonl",))
    pipeline = build_pipeline(settings)
    retrieval = build_retrieval(settings, pipeline.model)
    turn = Turn(conversation_id="demo-travel-1", turn_id="1", role=Role.ASSISTANT, text=REPLY)
    async with pipeline.model:
        for context in ((), (QUESTION,)):
            claimset = await segment(turn, context, pipeline.model, pipeline.prompts.segment, pipeline.parser,
                                         pipeline.nli)
            evidence = await retrieve(claimset, retrieval.retriever, pipeline.model, pipeline.sources_prompt)
            verdict = await verify(evidence, pipeline.model, pipeline.prompts.verify, pipeline.calibration,
                                   pipeline.selective)
            print(f"context: {[c.text for c in context]}")
            print(f"  passages: {[p.text[:60] for p in evidence.passages]}")
            for v in verdict.claim_verdicts:
                print(f"  {v.claim_text} -> {v.label.value}: combined true {v.scores.true:.3f} false"
                      f" {v.scores.false:.3f}; model alone false {v.model_scores.false:.3f}; {list(v.signals)}")
    retrieval.close()


if __name__ == "__main__":
    asyncio.run(main())
