"""Is the DiaHalu classifier (log-probs + counts + hidden, PCA 16; the saved artifact) just predicting the domain?
Applies research/artifacts/diahalu_turn_pca16.json to the odd dialogues and tabulates by domain (analysis only)."""
import json, sys
sys.argv = [sys.argv[0]]; sys.path.insert(0, "research")
import numpy as np
from collections import defaultdict
from extract import load as rows_of
from fit import load, closed_book
a = json.load(open("research/artifacts/diahalu_turn_pca16.json"))
recs, E = load("diahalu")
X = np.hstack([np.array([closed_book(r) for r in recs]), E])
z = (X - a["mean"]) / np.array(a["scale"])
z = (z - a["pca_mean"]) @ np.array(a["pca_components"]).T
p = 1 / (1 + np.exp(-(z @ np.array(a["coef"]).T + a["intercept"]).ravel()))
rows = rows_of("diahalu"); by = defaultdict(lambda: [0, 0, 0, 0])
for i in range(1, len(rows), 2):
    pred = p[[k for k, r in enumerate(recs) if r["row"] == i]].max() >= a["dialogue_threshold"]
    gold = rows[i]["label"] == "hallucination"
    d = by[rows[i]["domain"]]; d[0] += 1; d[1] += gold; d[2] += pred; d[3] += pred == gold
for dom, (n, g, pr, ok) in sorted(by.items()):
    print(f"{dom:20s} n={n:2d} gold halluc={g:2d} predicted halluc={pr:2d} correct={ok:2d} ({ok/n:.2f})")
