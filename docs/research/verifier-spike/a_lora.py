"""Route (a): LoRA on Gemma 3 270M (dequantized from the project's Q4_K_M GGUF) on CPU, exported as a GGUF LoRA.

Task: "Evidence: ...\nClaim: ...\nVerdict:" -> " true" | " false" | " unverifiable" (loss on the label tokens only).
Training items: EVEN rows only (HaluEval QA answers, AVeriTeC claims, atomic claims built from even AVeriTeC rows).
Run:  .venv/bin/python research/a_lora.py pilot           # seconds per example, no export
      .venv/bin/python research/a_lora.py train N_STEPS   # train, export research/lora/verdict-lora.gguf
"""
from __future__ import annotations

import json, random, sys, time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
import os
torch.set_num_threads(int(os.environ.get("HW_THREADS", "2")))
torch.manual_seed(0)

from extract import items, MAX_EVIDENCE_CHARS  # noqa: E402

HF_NAMES = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
            "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]
VERDICT = {"factual": "true", "hallucination": "false", "true": "true", "false": "false", "unverifiable": "unverifiable"}


def verdict_prompt(evidence: str, context: str, text: str) -> str:
    q = context.replace("Answer:", "").replace("Claim:", "").strip()
    claim = (q + " " if q else "") + text.strip()
    ev = evidence[:900] if evidence else "(none)"
    return f"Evidence: {ev}\nClaim: {claim}\nVerdict:"


def training_items(parity: int = 0):
    out = []
    for ds in ("halueval", "averitec", "atomic"):
        for it in items(ds):
            if it["row"] % 2 == parity:
                out.append((verdict_prompt(it["evidence"], it["context"], it["text"]), " " + VERDICT[it["label"]], ds))
    return out


def load_model():
    from transformers import AutoModelForCausalLM, AutoTokenizer
    p, f = str(ROOT / "models"), "gemma-3-270m-q4_k_m.gguf"
    tok = AutoTokenizer.from_pretrained(p, gguf_file=f)
    tok.truncation_side = "left"
    model = AutoModelForCausalLM.from_pretrained(p, gguf_file=f, dtype=torch.float32)
    return tok, model


def export_gguf(model, path: Path, r: int, alpha: float):
    import gguf
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_type(gguf.GGUFType.ADAPTER)
    w.add_string(gguf.Keys.Adapter.TYPE, "lora")
    w.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
    sd = model.state_dict()
    n = 0
    for name, t in sd.items():
        if ".lora_A." not in name:
            continue
        # base_model.model.model.layers.3.self_attn.q_proj.lora_A.default.weight
        parts = name.split(".")
        layer = int(parts[parts.index("layers") + 1])
        proj = parts[parts.index("lora_A") - 1]
        base = f"blk.{layer}.{HF_NAMES[proj]}.weight"
        a = t.detach().float().numpy()
        b = sd[name.replace("lora_A", "lora_B")].detach().float().numpy()
        w.add_tensor(base + ".lora_a", np.ascontiguousarray(a))
        w.add_tensor(base + ".lora_b", np.ascontiguousarray(b))
        n += 1
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    return n


def main():
    mode = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    r, alpha = 8, 16
    t0 = time.time()
    tok, model = load_model()
    print("loaded in", round(time.time() - t0, 1), "s", flush=True)
    from peft import LoraConfig, get_peft_model
    model = get_peft_model(model, LoraConfig(r=r, lora_alpha=alpha, target_modules=TARGETS, lora_dropout=0.0, bias="none"))
    model.print_trainable_parameters()
    data = training_items(0)
    random.Random(0).shuffle(data)
    # balance by label: oversample nothing, but report counts
    from collections import Counter
    print("train items", len(data), Counter(d[1] for d in data), flush=True)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-4, weight_decay=0.0)
    model.train()
    times, losses = [], []
    label_ids = {w: tok(" " + w, add_special_tokens=False)["input_ids"][0] for w in ("true", "false", "unverifiable")}
    print("label first tokens", label_ids, flush=True)
    # class-balanced loss weights (unverifiable is rare)
    counts = Counter(d[1].strip() for d in data)
    cw = {w: len(data) / (3 * counts[w]) for w in counts}
    for step in range(steps):
        prompt, target, ds = data[step % len(data)]
        enc = tok(prompt, return_tensors="pt", truncation=True, max_length=384)
        s = time.time()
        # only the next-token logits after "Verdict:" are needed: skip the 262k-vocab head elsewhere
        out = model(**enc, logits_to_keep=1)
        logits = out.logits[0, -1]
        loss = torch.nn.functional.cross_entropy(logits[None], torch.tensor([label_ids[target.strip()]])) * cw[target.strip()]
        loss.backward()
        opt.step(); opt.zero_grad()
        times.append(time.time() - s); losses.append(loss.item())
        if mode == "train" and (step + 1) % 100 == 0:
            (ROOT / "lora").mkdir(exist_ok=True)
            export_gguf(model, ROOT / "lora" / f"verdict-lora-step{step + 1}.gguf", r, alpha)
            print("checkpoint", step + 1, flush=True)
        if step % 10 == 0 or step == steps - 1:
            print(f"step {step} tokens {enc['input_ids'].shape[1]} loss {np.mean(losses[-10:]):.3f} s/ex {np.mean(times[-10:]):.2f} elapsed {time.time()-t0:.0f}", flush=True)
    print("mean s/example", round(float(np.mean(times)), 3), "median tokens", flush=True)
    out = ROOT / "lora"
    out.mkdir(exist_ok=True)
    path = out / ("verdict-lora-pilot.gguf" if mode == "pilot" else "verdict-lora.gguf")
    n = export_gguf(model, path, r, alpha)
    print("exported", n, "pairs to", path, path.stat().st_size, "bytes; total", round(time.time() - t0, 1), "s")


if __name__ == "__main__":
    main()
