import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]; b = [json.loads(l) for l in open(sys.argv[2])]
n = 0
for x, y in zip(a, b):
    if x["claims"] != y["claims"]:
        n += 1
        print(f"[{x['conv']} t{x['turn']}] CTX: {' | '.join(c[:100] for c in x['ctx'][-2:])}\n  TURN: {x['text'][:200]}\n  OLD: {x['claims']}\n  NEW: {y['claims']}\n")
print(f"{n} of {len(a)} turns changed")
