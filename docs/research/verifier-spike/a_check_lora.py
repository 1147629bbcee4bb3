"""Does a GGUF LoRA load in llama-cpp-python and change the next-token distribution? Prints label probabilities."""
import sys, math
import numpy as np
import llama_cpp
from llama_cpp import Llama
sys.path.insert(0, "research")
from extract import MODEL, quiet
cb = quiet()
prompts = ["Evidence: Kew is a suburb of Johannesburg, South Africa.\nClaim: What city has a suburb called Kew? Pretoria\nVerdict:",
           "Evidence: Kew is a suburb of Johannesburg, South Africa.\nClaim: What city has a suburb called Kew? Johannesburg\nVerdict:"]
for lora in [None] + sys.argv[1:]:
    kw = dict(model_path=str(MODEL), n_ctx=512, n_threads=2, verbose=False)
    if lora:
        kw["lora_path"] = lora
    llm = Llama(**kw)
    ids = {w: llm.tokenize((" " + w).encode(), add_bos=False, special=False)[0] for w in ("true", "false", "unverifiable")}
    for p in prompts:
        llm.reset(); llm.eval(llm.tokenize(p.encode(), add_bos=True))
        lg = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).astype(np.float64)
        lp = lg - (lg.max() + math.log(np.exp(lg - lg.max()).sum()))
        top = llm.detokenize([int(lg.argmax())]).decode(errors="replace")
        print(lora or "base", p[-22:].replace("\n", " "), {w: round(float(np.exp(lp[i])), 4) for w, i in ids.items()}, "argmax", repr(top))
    llm.close()
