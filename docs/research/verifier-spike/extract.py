"""Model features for route (b), cached to research/cache/<dataset>.json + .npz.

For every item (evidence, context, text) it records, with Gemma 3 270M Q4_K_M (llama.cpp, 2 threads):
  * token log-probabilities of the text given evidence+context and given context only
    (mean, min, share of tokens below -5, pointwise mutual information = difference of means,
    and the strongest "the evidence suggests another token here" gap, as agents/verify.evidence_fit);
  * the final-token hidden state (llama.cpp embedding mode, last-token pooling) of a
    "evidence / claim / verdict:" prompt.
Run: .venv/bin/python research/extract.py halueval|averitec|diahalu|atomic [limit]
"""
from __future__ import annotations

import json, math, os, sys, time
from pathlib import Path

import numpy as np
import llama_cpp
from llama_cpp import Llama

ROOT = Path(__file__).resolve().parent
DATA = Path("/work/shared/data")
MODEL = ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"
CACHE = ROOT / "cache"
N_CTX = 2048
THREADS = int(os.environ.get("HW_THREADS", "2"))
USE_EMB = os.environ.get("HW_EMB", "1") == "1"
MAX_EVIDENCE_CHARS = 3000


def quiet():
    cb = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
    llama_cpp.llama_log_set(cb, None)
    return cb


class Scorer:
    def __init__(self, lora: str | None = None):
        self._cb = quiet()
        kw = dict(model_path=str(MODEL), n_ctx=N_CTX, n_threads=THREADS, n_threads_batch=THREADS, verbose=False, n_batch=512)
        if lora:
            kw["lora_path"] = lora
        self.llm = Llama(**kw)
        self.emb = Llama(embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_LAST, **kw) if USE_EMB else None
        self.demb = None
        self.n_vocab = self.llm.n_vocab()

    def tok(self, text: str, bos=False):
        return self.llm.tokenize(text.encode(), add_bos=bos, special=False)

    def score(self, prefix: str, text: str, reference: str = "") -> dict:
        """Log-probabilities of ``text``'s tokens after ``prefix``."""
        llm = self.llm
        p = self.tok(prefix, bos=True)
        t = self.tok(text)[:64]
        room = N_CTX - len(t) - 4
        if len(p) > room:
            p = p[:1] + p[len(p) - room + 1:]
        tokens = p + t
        # reuse the KV cache for the common prefix with the previous call (the passage + question)
        c = 0
        cur = getattr(self, "cur", [])
        while c < min(len(cur), len(tokens)) and cur[c] == tokens[c]:
            c += 1
        c = min(c, len(p) - 1)
        llm._ctx.kv_cache_seq_rm(-1, c, -1)
        self.cur = tokens
        wanted = set(range(len(p) - 1, len(tokens) - 1))
        rows = {}
        n_past = c
        for i in range(c, len(tokens), llm.n_batch):
            batch = tokens[i:i + llm.n_batch]
            llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=False)
            keep = [j for j in range(len(batch)) if n_past + j in wanted]
            for j in keep:
                llm._batch.batch.logits[j] = True
            llm._ctx.decode(llm._batch)
            for j in keep:
                lg = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, j), shape=(self.n_vocab,)).astype(np.float64)
                top = lg.max()
                rows[n_past + j] = lg - (top + math.log(np.exp(lg - top).sum()))
            n_past += len(batch)
        others = np.array(sorted(set(self.tok(reference)) - set(t)), dtype=np.int64) if reference else np.array([], dtype=np.int64)
        lps, gaps, ranks = [], [], []
        for k, tid in enumerate(t):
            row = rows[len(p) - 1 + k]
            lps.append(float(row[tid]))
            ranks.append(int((row > row[tid]).sum()))
            if len(others):
                gaps.append(max(0.0, float(row[others].max() - row[tid])))
        lps_w = lps[1:] if len(lps) > 1 else lps
        return {
            "mean": float(np.mean(lps_w)), "min": float(np.min(lps_w)), "first": lps[0],
            "low_share": float(np.mean([x < -5 for x in lps_w])), "n_tok": len(t),
            "gap": float(max(gaps[1:] or gaps or [0.0])), "top1_share": float(np.mean([r == 0 for r in ranks])),
            "sum": float(np.sum(lps)),
        }

    def dialogue(self, pieces):
        """One pass over a whole dialogue. pieces: (text, scored?) in order. Returns per scored piece
        (logprob stats, hidden state at its last token)."""
        if self.demb is None:
            self.demb = Llama(embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE, model_path=str(MODEL),
                              n_ctx=N_CTX, n_threads=THREADS, n_threads_batch=THREADS, verbose=False, n_batch=N_CTX, n_ubatch=N_CTX)
        tokens, spans = [self.llm.token_bos()], []
        for text, scored in pieces:
            ids = self.tok(text)
            if scored:
                spans.append((len(tokens), len(tokens) + len(ids)))
            tokens += ids
        if len(tokens) > N_CTX:
            keep = [k for k, (a, b) in enumerate(spans) if b <= N_CTX]
            tokens = tokens[:N_CTX]
        else:
            keep = list(range(len(spans)))
        llm = self.llm
        llm._ctx.kv_cache_seq_rm(-1, 0, -1); self.cur = []
        wanted = {i - 1 for a, b in spans for i in range(a, b) if i < len(tokens)}
        rows = {}
        for i in range(0, len(tokens), llm.n_batch):
            batch = tokens[i:i + llm.n_batch]
            llm._batch.set_batch(batch=batch, n_past=i, logits_all=False)
            ks = [j for j in range(len(batch)) if i + j in wanted]
            for j in ks:
                llm._batch.batch.logits[j] = True
            llm._ctx.decode(llm._batch)
            for j in ks:
                lg = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, j), shape=(self.n_vocab,)).astype(np.float64)
                top = lg.max()
                rows[i + j] = lg - (top + math.log(np.exp(lg - top).sum()))
        e = self.demb
        e._ctx.kv_cache_seq_rm(-1, 0, -1)
        ends = {spans[k][1] - 1 for k in keep}
        e._batch.set_batch(batch=tokens, n_past=0, logits_all=False)
        order = sorted(ends)
        for j in range(len(tokens)):
            e._batch.batch.logits[j] = j in ends
        e._ctx.decode(e._batch)
        hidden = {j: np.ctypeslib.as_array(llama_cpp.llama_get_embeddings_ith(e._ctx.ctx, j), shape=(640,)).astype(np.float32).copy() for j in order}
        out = []
        for k in keep:
            a, b = spans[k]
            lps = [float(rows[i - 1][tokens[i]]) for i in range(a, b)]
            ranks = [int((rows[i - 1] > rows[i - 1][tokens[i]]).sum()) for i in range(a, b)]
            w = lps[1:] if len(lps) > 1 else lps
            out.append(({"mean": float(np.mean(w)), "min": float(np.min(w)), "first": lps[0], "low_share": float(np.mean([x < -5 for x in w])),
                         "n_tok": len(lps), "gap": 0.0, "top1_share": float(np.mean([r == 0 for r in ranks])), "sum": float(np.sum(lps))}, hidden[b - 1]))
        return keep, out

    def embed(self, text: str) -> np.ndarray:
        if self.emb is None:
            return np.zeros(640, dtype=np.float32)
        toks = self.emb.tokenize(text.encode(), add_bos=True, special=False)
        if len(toks) > N_CTX - 8:
            toks = toks[:1] + toks[len(toks) - (N_CTX - 9):]
            text = self.emb.detokenize(toks[1:]).decode("utf-8", "ignore")
        v = self.emb.embed(text, normalize=False)
        return np.asarray(v, dtype=np.float32).reshape(-1)[-640:] if np.asarray(v).ndim == 1 else np.asarray(v[-1], dtype=np.float32)


def load(name):
    return [json.loads(l) for l in (DATA / name / "dev-public.jsonl").open() if l.strip()]


def averitec_evidence(row) -> str:
    lines = []
    for e in row.get("evidence") or []:
        a = " ".join(str(e.get("answer") or "").split())
        x = str(e.get("boolean_explanation") or "").strip()
        lines.append(f"Q: {' '.join(str(e.get('question') or '').split())} A: {a}" + (f" ({x})" if x else ""))
    return "\n".join(lines)[:MAX_EVIDENCE_CHARS]


def items(dataset: str):
    """(row index, label, kind, evidence, context, text) for each item."""
    if dataset == "halueval":
        for i, r in enumerate(load("halueval-qa")):
            for lab, key in (("factual", "right_answer"), ("hallucination", "hallucinated_answer")):
                yield dict(row=i, label=lab, evidence=" ".join(r["knowledge"].split())[:MAX_EVIDENCE_CHARS],
                           context=f"Question: {r['question'].strip()}\nAnswer:", text=" " + r[key].strip())
    elif dataset == "averitec":
        for i, r in enumerate(load("averitec")):
            yield dict(row=i, label=r["label"], evidence=averitec_evidence(r), context="Claim:", text=" " + r["claim"].strip())
    elif dataset == "atomic":
        sys.path.insert(0, str(ROOT.parent))
        from agents.atomic_claims import atomic_cases, answer_sentence
        from agents.datasets import read_averitec, read_jsonl
        path = DATA / "averitec" / "dev-public.jsonl"
        rows = load("averitec")
        for parity in (0, 1):  # built separately from even and from odd rows: no mixing
            idx = list(range(parity, len(rows), 2))
            cases = [read_averitec(path)[i] for i in idx]
            answers = [answer_sentence(rows[i].get("evidence") or []) for i in idx]
            for c in atomic_cases(cases, answers):
                i = next(k for k in idx if rows[k]["id"] == c.case_id.split("-atomic-")[0])
                yield dict(row=i, label=c.label.value, evidence=averitec_evidence(rows[i]), context="Claim:", text=" " + c.turn.text)
    elif dataset == "diahalu":
        for i, r in enumerate(load("diahalu")):
            ctx = ""
            for t in r["turns"]:
                who = "User" if t["role"] == "user" else "Assistant"
                text = " ".join(str(t["text"]).split()) or "(empty)"
                if t["role"] == "assistant":
                    lab = "hallucination" if t.get("speaker") in (r.get("hallucinated_turns") or []) else "factual"
                    yield dict(row=i, label=lab, dialogue_label=r["label"], speaker=t.get("speaker"), evidence="",
                               context=ctx + "Assistant:", text=" " + text)
                ctx += f"{who}: {text}\n"


def embed_prompt(dataset: str, it: dict) -> str:
    """The text whose final-token hidden state is kept."""
    if dataset == "diahalu":
        return it["context"] + it["text"] + "\nIs the last assistant turn factually correct? Answer:"
    question = it["context"].replace("Answer:", "").replace("Claim:", "").strip()
    claim = (question + " " if question else "") + it["text"].strip()
    return f"Evidence: {it['evidence']}\nClaim: {claim}\nIs the claim supported by the evidence? Answer:"


def main():
    dataset = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
    lora = sys.argv[3] if len(sys.argv) > 3 else None
    tag = dataset + (("-" + Path(lora).stem) if lora else "")
    s = Scorer(lora)
    out, embs = [], []
    started = time.time()
    if dataset == "diahalu":
        for i, r in enumerate(load("diahalu")):
            t0 = time.time()
            its = [it for it in items("diahalu") if it["row"] == i] if False else None
            pieces, meta = [], []
            for t in r["turns"]:
                text = " ".join(str(t["text"]).split()) or "(empty)"
                if t["role"] == "assistant":
                    pieces += [("Assistant:", False), (" " + text, True), ("\n", False)]
                    lab = "hallucination" if t.get("speaker") in (r.get("hallucinated_turns") or []) else "factual"
                    meta.append(dict(row=i, label=lab, dialogue_label=r["label"], speaker=t.get("speaker"), text=" " + text))
                else:
                    pieces += [(f"User: {text}\n", False)]
            keep, res = s.dialogue(pieces)
            for k, (stats, h) in zip(keep, res):
                rec = dict(meta[k]); rec["with"] = stats; rec["without"] = None; rec["seconds"] = round((time.time() - t0) / len(res), 3)
                out.append(rec); embs.append(h)
            if i % 10 == 0:
                print(i, round(time.time() - started, 1), "s", flush=True)
        limit = 0
    for n, it in enumerate(items(dataset) if dataset != "diahalu" else []):
        if limit is not None and n >= limit:
            break
        t0 = time.time()
        ev = it["evidence"]
        head = f"Passage: {ev}\n" if ev else ""
        with_ev = s.score(head + it["context"], it["text"], reference=ev)
        without = s.score(it["context"], it["text"]) if ev else None
        prompt = embed_prompt(dataset, it)
        embs.append(s.embed(prompt))
        rec = {k: v for k, v in it.items() if k not in ("evidence", "context")}
        rec["with"] = with_ev
        rec["without"] = without
        rec["seconds"] = round(time.time() - t0, 3)
        out.append(rec)
        if n % 25 == 0:
            print(n, round(time.time() - started, 1), "s", flush=True)
    CACHE.mkdir(exist_ok=True)
    (CACHE / f"{tag}.json").write_text(json.dumps(out))
    np.savez_compressed(CACHE / f"{tag}.npz", emb=np.stack(embs))
    print("done", len(out), "items", round(time.time() - started, 1), "s", round((time.time() - started) / len(out), 3), "s/item")


if __name__ == "__main__":
    main()
