"""Pooled states of the evidence cross-encoder for every judged claim (research, session 22).

The packaged graph gives two logits. Its last hidden layer before them (the pooler, 384 values) holds
more: this exposes that tensor as a second output and records, for each claim in saved judgements, the
pooled state of the chunk with the highest margin in each direction. Saved as .npz next to the output
path, keyed like the judgements (file, case position, turn, claim).

    python docs/research/encoder-head/extract.py OUT.npz docs/results/averitec-judgements.json ...
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import sentencepiece

from agents.evaluation.harness import load_judgements
from agents.model.nli import CLAIM_TOKENS, evidence_chunks
from agents.model.onnx_nli import SEQUENCE_LENGTH, package_folder, pair_input
from agents.stages.verify import claim_as_read

POOLED = "/m/pooler/Mul_1_output_0"


class PooledClassifier:
    def __init__(self) -> None:
        folder = package_folder()
        model = onnx.load(str(folder / "policy_nli_int8.onnx"))
        model.graph.output.append(onnx.helper.make_tensor_value_info(POOLED, onnx.TensorProto.FLOAT, [1, 384]))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 2
        self.session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        self.vocabulary = sentencepiece.SentencePieceProcessor(model_file=str(folder / "policy_nli_tokenizer" / "spm.model"))

    def tokens(self, text: str) -> list[int]:
        return list(self.vocabulary.encode(text))

    def run(self, first, second) -> tuple[float, np.ndarray]:
        logits, pooled = self.session.run(None, pair_input(first, second))
        return float(logits[0, 1] - logits[0, 0]), pooled[0]


def claim_vectors(model: PooledClassifier, claim: str, passages: list[str]) -> np.ndarray:
    """[forward margin, backward margin, mean fwd, mean bwd, pooled fwd (384), pooled bwd (384)]"""
    out = np.zeros(4 + 768, dtype=np.float32)
    if not passages:
        return out
    claim_ids = model.tokens(claim)[:CLAIM_TOKENS]
    chunks = evidence_chunks(claim, passages, SEQUENCE_LENGTH - 3 - len(claim_ids), model)
    if not chunks:
        return out
    fwd = [model.run(c, claim_ids) for c in chunks]
    bwd = [model.run(claim_ids, c) for c in chunks]
    bf, bb = max(fwd, key=lambda r: r[0]), max(bwd, key=lambda r: r[0])
    out[0], out[1] = bf[0], bb[0]
    out[2], out[3] = np.mean([r[0] for r in fwd]), np.mean([r[0] for r in bwd])
    out[4:388], out[388:] = bf[1], bb[1]
    return out


def main(out: Path, paths: list[Path]) -> None:
    model = PooledClassifier()
    keys, vectors = [], []
    for path in paths:
        run = load_judgements(path)
        for case in run.cases:
            for kind, turns in (("judged", case.judged), ("whole", case.whole)):
                for t_index, turn in enumerate(turns):
                    passages = [p.text for p in turn.evidence.passages]
                    for c_index, claim in enumerate(turn.evidence.claimset.claims):
                        keys.append(f"{path.stem}|{case.position}|{kind}|{t_index}|{c_index}")
                        vectors.append(claim_vectors(model, claim_as_read(claim), passages))
        print(path, len(keys), flush=True)
    np.savez_compressed(out, keys=np.array(keys), vectors=np.stack(vectors))


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
