"""Route (a) step 1: can transformers load Gemma 3 270M from the project's Q4_K_M GGUF?"""
import time, torch, sys
from transformers import AutoModelForCausalLM, AutoTokenizer
p = "research/models"; f = "gemma-3-270m-q4_k_m.gguf"
t = time.time()
tok = AutoTokenizer.from_pretrained(p, gguf_file=f)
model = AutoModelForCausalLM.from_pretrained(p, gguf_file=f, dtype=torch.float32)
print("load s", round(time.time() - t, 1), type(model).__name__, sum(x.numel() for x in model.parameters()) / 1e6, "M params")
ids = tok("The Eiffel Tower is in the city of", return_tensors="pt")
out = model.generate(**ids, max_new_tokens=5, do_sample=False)
print(repr(tok.decode(out[0])))
if len(sys.argv) > 1:
    model.save_pretrained(sys.argv[1]); tok.save_pretrained(sys.argv[1])
