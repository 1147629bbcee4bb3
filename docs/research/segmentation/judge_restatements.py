"""The optional judge (Qwen2.5-Coder-1.5B) read between the two claims of each hand-read possible restatement pair.

    pip install -e '.[judge]'
    python docs/research/segmentation/judge_restatements.py > docs/research/segmentation/judge-restatements.txt

The cross-encoder could not tell a restatement from two distinct claims about one subject for the pairs it left
outside its band (`nli_restatements.py`). This asks the shipped judge, both readings averaged as the verify stage
does, whether one claim of a pair (as the evidence) supports the other, both ways; a restatement should read
"supported" both ways, a distinct pair not. It prints each pair's p(supported) both ways and the smaller of the
two, the AUC of that smaller one for restatements (R) against distinct pairs (D) per set, and then a cut chosen
on the DiaHalu pairs only (just above every distinct pair there) checked on the HaluEval pairs, and the same
with the cut the segment stage ships (agents.stages.restatements.JUDGE_RESTATEMENT_CUT). About five minutes on
2 cores.
"""

import asyncio

from audit_pairs import pairs

from agents.evaluation.metrics import roc_area
from agents.model.judge import judge_runner
from agents.stages.restatements import JUDGE_RESTATEMENT_CUT
from stream.settings import Settings


async def main() -> None:
    settings = Settings.from_env()
    judge = judge_runner("qwen-1.5b", settings.model.cache_dir, settings.model.n_threads)
    rows = []
    for label, case, a, b in pairs():
        b_after_a = (await judge.scores([b], [a]))[0].together
        a_after_b = (await judge.scores([a], [b]))[0].together
        rows.append((label, case, b_after_a.true, a_after_b.true, a, b))
    judge.close()
    for label, case, forward, backward, a, b in sorted(rows):
        print(f"{label} {forward:6.3f} {backward:6.3f} | {a[:60]} | {b[:60]}")
    both = {source: [(label, min(f, b)) for label, case, f, b, _, _ in rows if case.startswith(source)]
            for source in ("diahalu", "halueval")}
    for source, scored in both.items():
        r = [s for label, s in scored if label == "R"]
        d = [s for label, s in scored if label == "D"]
        print(f"{source}: AUC of the smaller p(supported), R ({len(r)}) against D ({len(d)}): {roc_area(r, d):.3f}")
    distinct = [s for label, s in both["diahalu"] if label == "D"]
    chosen = max(distinct, default=0.0)  # above every DiaHalu distinct pair
    for cut, why in ((chosen, "chosen on DiaHalu"), (JUDGE_RESTATEMENT_CUT, "as shipped")):
        for source, scored in both.items():
            counts: dict[str, list[int]] = {}
            for label, s in scored:
                counts.setdefault(label, [0, 0])[s > cut] += 1
            summary = ", ".join(f"{k}: {v[1]} of {sum(v)} above" for k, v in sorted(counts.items()))
            print(f"{source}, smaller p(supported) above {cut:.4f} ({why}): {summary}")


if __name__ == "__main__":
    asyncio.run(main())
