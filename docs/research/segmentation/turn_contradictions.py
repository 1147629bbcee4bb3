"""The cross-encoder's four readings of every saved claim beside the turn that said it, and how many pass a margin.

    python docs/research/segmentation/turn_contradictions.py /tmp/turn-contradictions.jsonl \
        docs/results/*-judgements.json docs/research/grounded-paraphrase/more-cases-judgements.json

Each claim of the saved judgements is read beside its turn (both ways round), then beside the user's last line
and the turn (both ways), as `agents.stages.faithfulness` reads a proposed claim. Writes one JSON line per claim
(the four margins, the turn, the claim) and prints, per file, how many claims reach each margin in all four
readings. A claim the stage built from a bare answer and its question is left out: no model wrote it. About ten
minutes on 2 cores for all six files.
"""

import asyncio
import json
import sys
from pathlib import Path

from agents.evaluation.harness import load_judgements
from agents.model.nli import NliRunner
from agents.text import last_user_line

MARGINS = (2.0, 2.5, 3.0, 3.5, 4.0)


async def main(out: str, *files: str) -> None:
    nli = NliRunner()
    rows = []
    for name in files:
        for case in load_judgements(Path(name)).cases:
            for turn in case.judged:
                claimset = turn.evidence.claimset
                asked = last_user_line(claimset.context)
                claims = [c.text for c in claimset.claims if not (asked and c.text.startswith(asked.strip()))]
                alone = await nli.score(claims, [claimset.turn_text])
                with_question = await nli.score(claims, [f"{asked} {claimset.turn_text}".strip()])
                for claim, a, q in zip(claims, alone, with_question):
                    rows.append({"file": Path(name).name, "case": case.case_id, "gold": case.gold,
                                 "position": case.position, "turn": claimset.turn_text, "claim": claim,
                                 "margins": [a.forward, a.backward, q.forward, q.backward]})
    nli.close()
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in sorted({r["file"] for r in rows}):
        mine = [r for r in rows if r["file"] == name]
        counts = ", ".join(f">= {m}: {sum(min(r['margins']) >= m for r in mine)}" for m in MARGINS)
        print(f"{name}: {len(mine)} claims; in all four readings {counts}")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
