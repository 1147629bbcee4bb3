"""Saved judgements say when they no longer match the code: their prompts' digest, and a replay of their claims."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agents.evaluation.datasets import ClaimCase
from agents.evaluation.harness import (
    PARAPHRASE_FILE,
    EvalRun,
    evaluate_atomic,
    evaluate_diahalu,
    load_judgements,
    save_judgements,
)
from agents.evaluation.provenance import (
    judge_digest,
    judge_staleness,
    other_encoder,
    other_model,
    prompt_digest,
    staleness,
)
from agents.evaluation.segmentation import claim_drift, dialogue_turns, evaluate_segmentation
from agents.model.config import EMBEDDED_MODEL, ModelConfig
from agents.model.judge import JudgeRunner, judge_templates
from agents.model.nli import NLI_MODEL
from agents.model.runner import ModelRunner
from agents.parsing import shared_parser
from agents.scoring.calibration import VerifyCalibration
from agents.stages.pipeline import Pipeline, Prompts
from agents.stages.verify import VerifyPrompts
from agents.testing.recorded_backend import RecordedBackend
from agents.testing.scripted_letters import ScriptedLetters
from schemas import Label, Role, Turn
from stream.commands.evaluate import load_checked_judgements
from stream.settings import Settings
from tests.conftest import SHARED_DATA
from tests.support.records import dialogue, passage, reply_as_claim

ROOT = Path(__file__).resolve().parents[4]
RESULTS = ROOT / "docs" / "results"


CASES = [dialogue("nile", "The Nile flows north.", "It ends in the Mediterranean."), dialogue("alps", "Mont Blanc is 4805 m high.")]


@pytest.fixture
async def judged(scripted) -> tuple[EvalRun, Pipeline]:
    runner, _ = scripted({"segment": reply_as_claim, "verify_closed_book": '{"verdicts":[{"label":"true","why":"x"}]}',
                          "justify": '{"errors":[],"corrected_text":"x"}'})
    pipeline = Pipeline(runner, Prompts.load(), VerifyCalibration.identity(), shared_parser(), max_rounds=1)
    return await evaluate_diahalu(CASES, pipeline, show_progress=False), pipeline


@pytest.fixture
async def judged_with_letters(scripted) -> tuple[EvalRun, JudgeRunner]:
    """Claims checked against retrieved evidence, which the judge reads (it does not read claims without any)."""
    runner, _ = scripted({"verify": '{"verdicts":[{"label":"true","why":"[1] says so"}]}'})
    judge = JudgeRunner(ScriptedLetters(lambda prompt: (0.6, 0.3, 0.1)))
    pipeline = Pipeline(runner, Prompts.load(), VerifyCalibration.identity(), shared_parser(), max_rounds=1, judge=judge)
    cases = [ClaimCase(f"c{i}", Turn(conversation_id=f"c{i}", turn_id="claim", role=Role.ASSISTANT, text=text),
                       (passage(text),), Label.TRUE) for i, text in enumerate(("The Nile flows north.", "Mont Blanc is 4805 m high."))]
    try:
        run = await evaluate_atomic(cases, pipeline, show_progress=False)
    finally:
        judge.close()
    return run, judge


async def test_a_run_records_its_prompts_digest_and_keeps_it_through_a_saved_file(judged, tmp_path: Path) -> None:
    run, pipeline = judged
    assert run.prompt_digest == prompt_digest(run.cases, pipeline.prompts.verify)
    assert run.model == EMBEDDED_MODEL
    save_judgements(run, tmp_path / "j.json")
    loaded = load_judgements(tmp_path / "j.json")
    assert (loaded.prompt_digest, loaded.model) == (run.prompt_digest, run.model)
    assert staleness(loaded.prompt_digest, loaded.cases, pipeline.prompts.verify) is None
    assert other_model(loaded.model, EMBEDDED_MODEL) is None
    assert "now is qwen.gguf" in other_model(loaded.model, ModelConfig(model_path=Path("/m/qwen.gguf")).name)
    # The encoder that scored the claims travels with the file too; a file without one holds no scores.
    assert loaded.nli_model == run.nli_model == NLI_MODEL and other_encoder(loaded.nli_model, NLI_MODEL) is None
    assert "hold no scores" in other_encoder("", NLI_MODEL)
    assert "come from other-encoder" in other_encoder("other-encoder", NLI_MODEL)


async def test_the_digest_changes_with_a_prompt_edit_or_another_claim(judged) -> None:
    run, pipeline = judged
    prompts = pipeline.prompts.verify
    edited = dataclasses.replace(prompts, closed_book=dataclasses.replace(
        prompts.closed_book, static=prompts.closed_book.static + "Answer in French.\n"))
    assert staleness(run.prompt_digest, run.cases, edited) is not None

    turn = run.cases[0].judged[0]
    claimset = turn.evidence.claimset
    reworded = dataclasses.replace(claimset, claims=(dataclasses.replace(claimset.claims[0], text="The Nile flows south."),))
    changed = dataclasses.replace(turn, evidence=dataclasses.replace(turn.evidence, claimset=reworded))
    run.cases[0].judged[0] = changed
    assert prompt_digest(run.cases, prompts) != run.prompt_digest
    assert "before runs recorded" in staleness("", run.cases, prompts)


async def test_a_run_read_by_the_judge_records_the_judge_prompts_digest_and_keeps_it(judged_with_letters, judged,
                                                                                   tmp_path: Path) -> None:
    run, judge = judged_with_letters
    assert run.judge_digest and run.judge_digest == judge_digest(run.cases, judge.templates)
    save_judgements(run, tmp_path / "j.json")
    loaded = load_judgements(tmp_path / "j.json")
    assert loaded.judge_digest == run.judge_digest
    assert judge_staleness(loaded.judge_digest, loaded.cases, judge_templates()) is None
    # Without a judge there are no letters, and nothing to go stale.
    plain, _ = judged
    assert plain.judge_digest == "" and judge_staleness("", plain.cases, judge_templates()) is None


async def test_judge_letters_go_stale_with_an_edited_judge_prompt(judged_with_letters) -> None:
    run, judge = judged_with_letters
    plain, few_shot = judge.templates
    edited = (plain, dataclasses.replace(few_shot, static=few_shot.static + "Answer B when unsure.\n"))
    assert "judge would now read other prompts" in judge_staleness(run.judge_digest, run.cases, edited)
    assert judge_staleness(run.judge_digest, run.cases, (plain,)) is not None  # one reading fewer
    assert "before runs recorded the judge's prompts" in judge_staleness("", run.cases, judge.templates)


async def test_eval_warns_when_the_judge_letters_it_reads_are_stale(judged_with_letters, tmp_path: Path, capsys) -> None:
    run, _ = judged_with_letters
    run.judge_digest = "0" * 16
    save_judgements(run, tmp_path / "diahalu-judgements.json")
    load_checked_judgements(tmp_path / "diahalu-judgements.json", VerifyPrompts.load(), EMBEDDED_MODEL)
    warned = capsys.readouterr().err
    assert "may be stale: the judge would now read other prompts" in warned
    assert "docs/research/qwen-profile/add_judge_scores.py qwen-1.5b" in warned  # and how to read them again


async def test_claim_drift_names_each_turn_whose_claims_segment_now_writes_differently(judged, scripted, tmp_path: Path) -> None:
    run, pipeline = judged
    path = tmp_path / "dialogues.jsonl"
    path.write_bytes(b"".join(orjson.dumps({
        "id": case.case_id, "label": "factual",
        "turns": [{"speaker": t.turn_id, "role": t.role.value, "text": t.text} for t in case.turns],
    }) + b"\n" for case in CASES))
    items = dialogue_turns(path)

    async def made_by(runner: ModelRunner) -> dict:
        made: dict = {}
        await evaluate_segmentation(items, runner, pipeline.prompts.segment, pipeline.parser, pipeline.nli, "x", False,
                                    made)
        return made

    same, _ = scripted({"segment": reply_as_claim})
    assert claim_drift(run.cases, await made_by(same)) == []

    def rewords_the_height(p) -> str:
        return '{"claims":["Mont Blanc stands 4805 m high."]}' if "Mont Blanc" in p.variable else reply_as_claim(p)

    other, _ = scripted({"segment": rewords_the_height})
    drift = claim_drift(run.cases, await made_by(other))
    assert drift == ["alps B0: saved ['Mont Blanc is 4805 m high.'] now ['Mont Blanc stands 4805 m high.']"]


SAVED = sorted(RESULTS.glob("*-judgements.json"))


@pytest.mark.parametrize("path", SAVED, ids=[p.name for p in SAVED])
def test_every_shipped_judgements_file_was_made_from_the_prompts_the_code_writes_today(path: Path) -> None:
    """The README's figures and the shipped verifier come from these files; a prompt or rendering change
    must come with a re-run (`halluwatch eval KIND FILE --save-judgements PATH`), or they describe old code."""
    run = load_judgements(path)
    assert staleness(run.prompt_digest, run.cases, VerifyPrompts.load()) is None, (
        f"{path.name} is stale: re-run `halluwatch eval {run.dataset} ... --save-judgements {path}`")
    assert run.model == EMBEDDED_MODEL, f"{path.name} was made with {run.model or 'an unrecorded model'}"
    assert run.nli_model == NLI_MODEL, (
        f"{path.name} holds no scores of the cross-encoder: docs/research/nli-evidence/add_scores.py adds them")
    assert judge_staleness(run.judge_digest, run.cases, judge_templates()) is None, (
        f"{path.name}'s judge letters are stale: docs/research/qwen-profile/add_judge_scores.py reads them again")


RECORDED = [("halueval", SHARED_DATA / "halueval-qa/dev-public.jsonl"), ("diahalu", SHARED_DATA / "diahalu/dev-public.jsonl"),
            ("averitec", SHARED_DATA / "averitec/dev-public.jsonl"), ("paraphrase", PARAPHRASE_FILE)]


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is not beside the checkout")
@pytest.mark.parametrize(("kind", "data"), RECORDED, ids=[k for k, _ in RECORDED])
async def test_the_recorded_segment_answers_replay_to_the_claims_of_the_shipped_judgements(kind: str, data: Path,
                                                                                          nli) -> None:
    """Segmentation rules run after the model: a rule change shows here as drift, before the figures go stale."""
    run = load_judgements(RESULTS / f"{kind}-judgements.json")
    prompts = Prompts.load()
    model = ModelRunner(Settings().model, backend=RecordedBackend.load(RESULTS / f"segment-answers-{kind}.jsonl"))
    made: dict = {}
    async with model:
        await evaluate_segmentation(dialogue_turns(data), model, prompts.segment, shared_parser(), nli, kind, False,
                                    made)
    drift = claim_drift(run.cases, made)
    assert drift == [], (
        f"{len(drift)} turns of {kind}-judgements.json have other claims today, e.g. {drift[:2]}: re-record the "
        f"segment answers if the model's answers changed (`eval segmentation --save-answers`), then re-run the judgements")


def test_eval_warns_when_the_judgements_it_re_decides_are_stale(tmp_path: Path) -> None:
    stale = load_judgements(RESULTS / "paraphrase-judgements.json")
    stale.prompt_digest = "0" * 16
    stale.nli_model = ""
    save_judgements(stale, tmp_path / "paraphrase-judgements.json")
    done = subprocess.run([sys.executable, "-m", "stream.cli", "eval", "paraphrase",
                           "--judgements", str(tmp_path / "paraphrase-judgements.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "may be stale: the model would now read other verify prompts" in done.stderr
    # Scores of the cross-encoder alone are added in minutes: the warning says how, not only "run the model again".
    assert "hold no scores of the evidence cross-encoder" in done.stderr
    assert "docs/research/nli-evidence/add_scores.py" in done.stderr
    other = subprocess.run([sys.executable, "-m", "stream.cli", "eval", "paraphrase", "--model-path", "/nowhere/qwen.gguf",
                            "--judgements", "docs/results/paraphrase-judgements.json"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert other.returncode == 0, other.stderr
    assert "made with embedded Gemma 3 270M Q4_K_M, and the model now is qwen.gguf" in other.stderr
    fresh = subprocess.run([sys.executable, "-m", "stream.cli", "eval", "paraphrase",
                            "--judgements", "docs/results/paraphrase-judgements.json"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "stale" not in fresh.stderr
