"""Route (a) evaluation: label probabilities after "Verdict:" with llama-cpp-python (+ GGUF LoRA) on ODD rows.
Run: HW_THREADS=1 .venv/bin/python research/a_eval_lora.py research/lora/verdict-lora-step400.gguf|none [halueval averitec atomic]
"""
import json, math, os, sys, time
from collections import Counter
from pathlib import Path
import numpy as np
import llama_cpp
from llama_cpp import Llama
sys.path.insert(0, str(Path(__file__).resolve().parent))
from extract import MODEL, quiet, items, THREADS
from a_lora import verdict_prompt, VERDICT
from fit import report

cb = quiet()
lora = sys.argv[1]
sets = sys.argv[2:] or ["halueval", "averitec"]
kw = dict(model_path=str(MODEL), n_ctx=1024, n_threads=THREADS, n_threads_batch=THREADS, verbose=False)
if lora != "none":
    kw["lora_path"] = lora
llm = Llama(**kw)
ids = {w: llm.tokenize((" " + w).encode(), add_bos=False, special=False)[0] for w in ("true", "false", "unverifiable")}
results = {}
for ds in sets:
    t0 = time.time()
    gold, probs = [], []
    for it in items(ds):
        if it["row"] % 2 == 0:
            continue
        toks = llm.tokenize(verdict_prompt(it["evidence"], it["context"], it["text"]).encode(), add_bos=True)
        toks = toks[:1] + toks[-(1000):] if len(toks) > 1000 else toks
        llm.reset(); llm.eval(toks)
        lg = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).astype(np.float64)
        z = np.array([lg[ids[w]] for w in ("true", "false", "unverifiable")])
        p = np.exp(z - z.max()); p /= p.sum()
        gold.append(it["label"]); probs.append(p.tolist())
    sec = (time.time() - t0) / max(1, len(gold))
    P = np.array(probs)
    name = Path(lora).stem
    if ds == "halueval":
        pred = np.where(P[:, 0] >= P[:, 1:].max(1), "factual", "hallucination")
        report(f"[a] {name} {ds} argmax", gold, pred, ["factual", "hallucination"], f"({sec:.2f} s/item)")
    else:
        labels = ["true", "false", "unverifiable"]
        pred = np.array(labels)[P.argmax(1)]
        report(f"[a] {name} {ds} argmax", gold, pred, labels, f"({sec:.2f} s/item)")
    results[ds] = {"gold": gold, "probs": probs, "seconds_per_item": sec}
Path(__file__).resolve().parent.joinpath("cache", f"lora_eval_{Path(lora).stem}.json").write_text(json.dumps(results))
