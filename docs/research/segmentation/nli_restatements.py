"""The evidence cross-encoder read between the two claims of each hand-read possible restatement pair.

    python docs/research/segmentation/nli_restatements.py > /tmp/nli-restatements.txt

For each pair of `docs/results/segmentation-restatement-audit.txt` (label R/S/D/G, see its header) prints the
margins a-then-b and b-then-a (second logit minus first, as `agents.model.nli` reads them), then checks one band
chosen on the DiaHalu pairs only against the HaluEval pairs. About a minute on 2 cores.
"""

import asyncio
import sys

from audit_pairs import pairs

from agents.model.nli import NliRunner

# Chosen by reading the DiaHalu pairs only: both margins in the model's "support" band (its probes: support
# about 0.3, contradiction above 2, an unrelated sentence below -1).
BAND = (0.25, 0.8)


async def main() -> None:
    nli = NliRunner()
    rows = []
    for label, case, a, b in pairs():
        (ab,) = await nli.score([b], [a])  # forward: a, then b
        rows.append((label, case, ab.forward, ab.backward, a, b))
    nli.close()
    for label, case, forward, backward, a, b in sorted(rows):
        print(f"{label} {forward:6.2f} {backward:6.2f} | {a[:60]} | {b[:60]}")
    low, high = BAND
    for source in ("diahalu", "halueval"):
        counts: dict[str, list[int]] = {}
        for label, case, forward, backward, _, _ in rows:
            if case.startswith(source):
                inside = low <= forward <= high and low <= backward <= high
                counts.setdefault(label, [0, 0])[inside] += 1
        summary = ", ".join(f"{k}: {v[1]} of {sum(v)} in the band" for k, v in sorted(counts.items()))
        print(f"{source}: {summary}", file=sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
