"""`eval segmentation --save-answers` then `--answers`: the real model's answers replayed give the same report."""

import json
import subprocess
import sys
from pathlib import Path

DIALOGUE = {"id": "d1", "label": "factual", "turns": [
    {"speaker": "A1", "role": "user", "text": "How did Roman soldiers cross rivers on a march?"},
    {"speaker": "B1", "role": "assistant",
     "text": "They built pontoon bridges from boats. Julius Caesar crossed the Rhine on a timber bridge in 55 BC."},
    {"speaker": "A2", "role": "user", "text": "How long did that take?"},
    {"speaker": "B2", "role": "assistant", "text": "He had it built in ten days. It was taken down soon after."}]}


def segmentation(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "stream.cli", "eval", "segmentation", *args, "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_replayed_answers_give_the_report_of_the_model_run(tmp_path: Path) -> None:
    rows = tmp_path / "dialogue.jsonl"
    rows.write_text(json.dumps(DIALOGUE) + "\n")
    answers = tmp_path / "answers.jsonl"
    live = segmentation(str(rows), "--save-answers", str(answers))
    assert any(line.startswith("wrote") and "segment answers" in line for line in live)
    assert answers.read_text().count("\n") >= 1
    replayed = segmentation(str(rows), "--answers", str(answers))
    # The first line carries the run's seconds; everything the rules decided must be the same.
    report = [line for line in live[1:] if not line.startswith("wrote")]
    assert replayed[1:] == report and any("claims per turn" in line for line in report)
    # Topping up a recording that already holds every prompt asks the model nothing and keeps every answer.
    again = tmp_path / "again.jsonl"
    topped = segmentation(str(rows), "--answers", str(answers), "--save-answers", str(again))
    assert any(line.startswith("wrote") and "(0 from the model)" in line for line in topped)
    assert sorted(again.read_text().splitlines()) == sorted(answers.read_text().splitlines())
