from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agents.errors import InputError
from agents.evaluation.datasets import parse_dialogue_history, read_halueval
from agents.evaluation.harness import PARAPHRASE_FILE, build_report, evaluate_halueval, fitting_rows, format_report
from agents.model.backend import Prompt
from agents.parsing import shared_parser
from agents.scoring.calibration import VerifyCalibration
from agents.stages.pipeline import Pipeline, Prompts
from schemas import LabelScores, Role
from tests.conftest import SHARED_DATA

QA = {"id": "q1", "knowledge": "Arthur's Magazine was started in 1844. First for Women was started in 1989.",
      "question": "Which magazine was started first, Arthur's Magazine or First for Women?",
      "right_answer": "Arthur's Magazine", "hallucinated_answer": "First for Women"}
DIALOGUE = {"knowledge": "Iron Man is directed by Jon Favreau.",
            "dialogue_history": "[Human]: Do you like Iron Man? [Assistant]: Sure do! [Human]: Who directed it?",
            "right_response": "Jon Favreau directed it.", "hallucinated_response": "Steven Spielberg directed it."}


def write(tmp_path: Path, *rows: dict) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows))
    return path


def test_each_row_gives_a_factual_and_a_hallucinated_turn_on_one_side_of_the_split(tmp_path: Path) -> None:
    cases = read_halueval(write(tmp_path, QA, DIALOGUE))
    assert [(c.case_id, c.row, c.hallucination) for c in cases] == [
        ("q1/factual", 0, False), ("q1/hallucination", 0, True),
        ("halueval-2/factual", 1, False), ("halueval-2/hallucination", 1, True)]
    qa = cases[1]
    assert qa.turn.text == "First for Women" and qa.turn.role is Role.ASSISTANT
    assert [(c.role, c.text) for c in qa.context] == [(Role.USER, QA["question"])]
    assert qa.passages[0].text == QA["knowledge"]
    assert [c.role for c in cases[2].context] == [Role.USER, Role.ASSISTANT, Role.USER]


def test_dialogue_history_markers_become_roles() -> None:
    lines = parse_dialogue_history("[Human]: hi there [Assistant]: hello! [Human]: who won?")
    assert [(l.role, l.text) for l in lines] == [(Role.USER, "hi there"), (Role.ASSISTANT, "hello!"), (Role.USER, "who won?")]


def test_a_row_of_neither_kind_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"rows.jsonl:1: not a HaluEval row \(missing 'knowledge'\)"):
        read_halueval(write(tmp_path, {"question": "q"}))


async def test_a_turn_is_a_hallucination_unless_verified_true(scripted, tmp_path: Path) -> None:
    # The script calls the right answer true and the hallucinated one unverifiable: both come out right.
    def right(p: Prompt) -> bool:
        return "First for Women? Arthur's Magazine." in p.variable  # the bare answer, checked with its question

    runner, _ = scripted(
        {"segment": lambda p: '{"claims":["%s was started first."]}' % ("Arthur's Magazine" if "Reply: Arthur" in p.variable
                                                                          else "First for Women"),
         "verify": lambda p: '{"verdicts":[{"label":"%s","why":"x"}]}' % ("true" if right(p) else "unverifiable"),
         "justify": '{"errors":[],"corrected_text":"x"}'},
        label_scores={"verify": lambda p: [LabelScores(0.8, 0.1, 0.1) if right(p) else LabelScores(0.1, 0.1, 0.8)]},
    )
    pipeline = Pipeline(runner, Prompts.load(), VerifyCalibration.identity(), shared_parser(), max_rounds=1)
    run = await evaluate_halueval(read_halueval(write(tmp_path, QA)), pipeline, show_progress=False)
    assert [(c.gold, c.predicted) for c in run.cases] == [("factual", "factual"), ("hallucination", "hallucination")]
    report = build_report(run)
    text = format_report(report)
    assert "CAAFC, Gemma 3 27B" in text and "0.770" in text and "not true" in text
    # The trained and the untrained verifier are shown side by side (here both are the identity).
    systems = {s.name: s for s in report.systems}
    assert systems["pipeline"].all_rows.accuracy == systems["pipeline, base model (untrained)"].all_rows.accuracy == 1.0
    assert "pipeline, base model (untrained)" in text and "held-out acc" in text
    assert systems["pipeline"].held_out is None  # one row, at an even position: nothing is held out


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is not beside the checkout")
def test_the_public_halueval_file_reads() -> None:
    cases = read_halueval(SHARED_DATA / "halueval-qa" / "dev-public.jsonl")
    assert len(cases) == 500 and sum(c.hallucination for c in cases) == 250
    assert {c.row for c in cases} == set(range(250))


def test_the_bundled_paraphrase_rows_reword_their_knowledge() -> None:
    # The set exists because HaluEval's right answers are spans copied from the knowledge, so a verifier fitted
    # on HaluEval alone learns "copied words = true" and flags a right answer that says it in other words.
    cases = read_halueval(PARAPHRASE_FILE)
    assert len(cases) == 120 and sum(c.hallucination for c in cases) == 60
    right = [c for c in cases if not c.hallucination]
    assert not any(c.turn.text.rstrip(".") in c.passages[0].text for c in right)


async def test_paraphrase_rows_are_judged_and_fitted_as_grounded_turns(scripted, tmp_path: Path) -> None:
    runner, _ = scripted(
        {"segment": '{"claims":["Arthur\'s Magazine was started first."]}',
         "verify": '{"verdicts":[{"label":"true","why":"x"}]}',
         "justify": '{"errors":[],"corrected_text":"x"}'},
    )
    pipeline = Pipeline(runner, Prompts.load(), VerifyCalibration.identity(), shared_parser(), max_rounds=1)
    run = await evaluate_halueval(read_halueval(write(tmp_path, QA)), pipeline, False, dataset="paraphrase")
    assert run.dataset == "paraphrase" and [c.gold for c in run.cases] == ["factual", "hallucination"]
    # Fitted like HaluEval: on the segmented claims, a factual turn's claims true, a one-claim made-up turn false.
    assert [label.value for case in run.cases for _, label in fitting_rows("paraphrase", case)] == ["true", "false"]
