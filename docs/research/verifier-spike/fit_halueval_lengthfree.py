"""Check: does the HaluEval log-prob classifier rely on answer length? Drop the features that grow with length
(min log-prob, share below -5, max gap) and keep per-token averages and first-token values only."""
import sys; sys.argv = [sys.argv[0]]
sys.path.insert(0, "research")
import numpy as np
from fit import load, llm_feats, LLM_NAMES, fit_eval
recs, _ = load("halueval")
keep = [i for i, n in enumerate(LLM_NAMES) if n not in ("lp_min", "lp_low", "lp_gap", "pmi_min")]
X = np.array([llm_feats(r) for r in recs])[:, keep]
y = np.array([r["label"] for r in recs]); ev = np.array([r["row"] % 2 == 0 for r in recs])
n_tok = np.array([r["with"]["n_tok"] for r in recs])
print("features", [LLM_NAMES[i] for i in keep])
fit_eval(f"log-probs, per-token averages only ({len(keep)})", X[ev], y[ev], X[~ev], y[~ev], ["factual", "hallucination"])
L = np.log(n_tok)[:, None]
fit_eval("answer token count alone (1)", L[ev], y[ev], L[~ev], y[~ev], ["factual", "hallucination"])
