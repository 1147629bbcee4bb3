"""The turns whose claims differ between two dump_claims.py outputs of the same dialogues.

    python diff_claims.py OLD.jsonl NEW.jsonl
"""

import json
import sys


def main(old_path: str, new_path: str) -> None:
    old = [json.loads(line) for line in open(old_path)]
    new = [json.loads(line) for line in open(new_path)]
    changed = 0
    for a, b in zip(old, new):
        if a["claims"] != b["claims"]:
            changed += 1
            print(f"[{a['conv']} t{a['turn']}] CTX: {' | '.join(c[:100] for c in a['ctx'][-2:])}\n"
                  f"  TURN: {a['text'][:200]}\n  OLD: {a['claims']}\n  NEW: {b['claims']}\n")
    print(f"{changed} of {len(old)} turns changed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
