"""Does a claim that contradicts what the assistant said earlier in the same dialogue mark DiaHalu's hallucinations?

Research for issue #13 (session 30). Closed-book, the verifier has no evidence for a DiaHalu claim, but it has the
assistant's own earlier claims: a bot that contradicts itself has said something false at least once. This reads
each claim against every earlier claim of the assistant in its dialogue with the evidence cross-encoder
(`agents.model.onnx_nli`, both orders, the smaller margin of the two: a contradiction reads high both ways) and
asks whether the highest such score ranks the claims of the turns DiaHalu marks as hallucinated, and the
hallucinated dialogues, above the rest (AUC; chance 0.5).

    python docs/research/segmentation/dump_claims.py ../shared/data/diahalu/dev-public.jsonl \
        docs/results/segment-answers-diahalu.jsonl /tmp/diahalu-claims.jsonl      # seconds
    python docs/research/diahalu-closed-book/self_consistency.py /tmp/diahalu-claims.jsonl   # ~4 minutes, 2 cores
"""

import json
import sys
from pathlib import Path

from agents.evaluation.metrics import roc_area
from agents.model.nli import CLAIM_TOKENS
from agents.model.onnx_nli import OnnxPairClassifier

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data" / "diahalu" / "dev-public.jsonl"


def main(claims_path: str) -> None:
    classifier = OnnxPairClassifier(threads=2)
    rows = {row["id"]: row for row in map(json.loads, DATA.open())}
    dialogues: dict[str, list[dict]] = {}
    for line in open(claims_path):
        turn = json.loads(line)
        dialogues.setdefault(turn["conv"], []).append(turn)

    def margin(first: str, second: str) -> float:
        pair = (classifier.tokens(first)[:CLAIM_TOKENS], classifier.tokens(second)[:CLAIM_TOKENS])
        return classifier.margins([pair])[0]

    scored = []  # (dialogue, turn, claim, score, earlier claim)
    for conv, turns in dialogues.items():
        earlier: list[str] = []
        for turn in turns:
            for claim in turn["claims"]:
                best = max(((min(margin(e, claim), margin(claim, e)), e) for e in earlier), default=None)
                if best is not None:
                    scored.append((conv, turn["turn"], claim, best[0], best[1]))
            earlier += turn["claims"]

    marked = [s for s in scored if s[1] in rows[s[0]]["hallucinated_turns"]]
    rest = [s for s in scored if s[1] not in rows[s[0]]["hallucinated_turns"]]
    print(f"{len(scored)} claims with an earlier claim in their dialogue, {len(marked)} in turns marked hallucinated")
    print(f"  claim AUC (marked turns vs the rest)       {roc_area([s[3] for s in marked], [s[3] for s in rest]):.3f}")
    top: dict[str, float] = {}
    for conv, _, _, score, _ in scored:
        top[conv] = max(top.get(conv, -9.0), score)
    hallucinated = [v for c, v in top.items() if rows[c]["label"] == "hallucination"]
    factual = [v for c, v in top.items() if rows[c]["label"] == "factual"]
    print(f"  dialogue AUC (highest score per dialogue)  {roc_area(hallucinated, factual):.3f}")
    for threshold in (2.0, 3.0, 4.0):
        caught = sum(v > threshold for v in hallucinated)
        false_alarms = sum(v > threshold for v in factual)
        print(f"  score > {threshold}: {caught} of {len(hallucinated)} hallucinated dialogues flagged,"
              f" {false_alarms} of {len(factual)} factual ones")
    print("highest-scoring pairs (H: a marked turn, h: another turn of a hallucinated dialogue, .: factual dialogue):")
    for conv, turn, claim, score, other in sorted(scored, key=lambda s: -s[3])[:12]:
        mark = "H" if turn in rows[conv]["hallucinated_turns"] else ("h" if rows[conv]["label"] == "hallucination" else ".")
        print(f"  {mark} {score:5.2f} {conv} {turn}: {claim[:60]} <> {other[:60]}")


if __name__ == "__main__":
    main(sys.argv[1])
