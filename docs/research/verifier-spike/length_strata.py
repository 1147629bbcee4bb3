"""HaluEval odd rows: accuracy restricted to rows whose hallucinated answer is short (<= 3 words, like the right
answers), where length cannot give the label away."""
import json, sys
sys.argv = [sys.argv[0]]; sys.path.insert(0, "research")
import numpy as np
from extract import load as rows_of
from fit import load, llm_feats, lexical, LLM_NAMES, choose, model_for
rows = rows_of("halueval-qa")
short = {i for i, r in enumerate(rows) if len(r["hallucinated_answer"].split()) <= 3}
recs, _ = load("halueval")
y = np.array([r["label"] for r in recs]); ev = np.array([r["row"] % 2 == 0 for r in recs])
sel = np.array([(r["row"] % 2 == 1) and r["row"] in short for r in recs])
print("odd rows with short hallucinated answer:", sel.sum() // 2, "rows,", sel.sum(), "items")
lora = json.load(open("research/cache/lora_eval_verdict-lora.json"))["halueval"]
P = np.array(lora["probs"]); odd_recs = [r for r in recs if r["row"] % 2 == 1]
pl = np.where(P[:, 0] >= P[:, 1:].max(1), "factual", "hallucination")
m = np.array([r["row"] in short for r in odd_recs])
print(f"LoRA: acc on short-rows items {np.mean(pl[m] == y[~ev][m]):.3f} (all odd {np.mean(pl == y[~ev]):.3f})")
keep_sets = {"log-probs (11)": list(range(len(LLM_NAMES))),
             "log-probs per-token averages (7)": [i for i, n in enumerate(LLM_NAMES) if n not in ("lp_min", "lp_low", "lp_gap", "pmi_min")]}
X = np.array([llm_feats(r) for r in recs])
Lx = np.array([lexical(r["text"], r["evidence"], r["context"]) for r in recs])
for name, k in keep_sets.items():
    C, _ = choose(X[ev][:, k], y[ev]); p = model_for(C).fit(X[ev][:, k], y[ev]).predict(X[sel][:, k])
    print(f"{name}: acc on short-rows items {np.mean(p == y[sel]):.3f}")
C, _ = choose(Lx[ev], y[ev]); p = model_for(C).fit(Lx[ev], y[ev]).predict(Lx[sel])
print(f"lexical (8): acc on short-rows items {np.mean(p == y[sel]):.3f}")
print(f"containment rule: acc on short-rows items {np.mean(np.where(Lx[sel,0] > 0, 'factual', 'hallucination') == y[sel]):.3f}")
