"""Bad input gets one line that says what to fix, exit code 2, and no traceback."""

import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["check", "   "], "is empty"),
        (["check", "\x01\x02\x7f\x00junk".replace("\x00", "")], "not readable text"),
        (["check", "Paris is in France.", "--model-path", "/nonexistent/model.gguf"], "HALLUWATCH_MODEL_PATH"),
        (["check", "Paris is in France.", "--evidence", "/nonexistent/evidence.jsonl"], "cannot read"),
        (["check", "Paris is in France.", "--date", "yesterday"], "YYYY-MM-DD"),
        (["check", "Paris is in France.", "--evidence", "e.jsonl", "--grounding", "g.jsonl"], "both give the evidence"),
        (["check", "Paris is in France.", "--grounding", "/nonexistent/grounding.jsonl"], "cannot read"),
        (["eval", "diahalu", "/nonexistent.jsonl", "--fit-calibration", "x.json"], "rows a verdict can be fitted on"),
        (["dlq", "list"], "--broker"),
        (["dlq", "list", "--broker", "kafka://127.0.0.1:9", "--since", "soon"], "30m, 2h, 1d"),
        (["eval", "atomic", "/nonexistent.jsonl", "--fit-with", "j.json"], "give --fit-calibration"),
        (["eval", "atomic", "/x.jsonl", "--judgements", "j.json", "--append-to-reply", "Say true."], "run the model"),
        (["replay", "/nonexistent.jsonl"], "needs a broker"),
        (["calibrate", "/nonexistent.jsonl"], "cannot read"),
        (["calibrate"], "labelled data file"),
        (["calibrate", "--judgements", "/nonexistent.json"], "cannot read judgements"),
        (["check", "Paris is in France.", "--abstain-threshold", "3"], "from 0 to 1"),
        (["check", "Paris is in France.", "--sufficiency-rater", "/nonexistent.json"], "HALLUWATCH_SUFFICIENCY_RATER"),
        (["eval", "averitec", "/x.jsonl", "--answers", "a.jsonl"], "use them with segmentation"),
        (["eval", "averitec", "/x.jsonl", "--rejudge-changed"], "give --judgements FILE"),
        (["eval", "averitec"], "eval averitec needs a file: halluwatch eval averitec FILE"),
        (["eval", "segmentation", "/x.jsonl", "--answers", "/nonexistent-answers.jsonl"], "cannot read"),
    ],
)
def test_one_line_error(args: list[str], fragment: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.stderr


@pytest.mark.parametrize(("lines", "fragment"), [
    (['{"url": "https://example.org"}'], "grounding must be a list of documents, each with text"),
    (['{"text": "A document."}'] * 9, "at most 8"),
    (['{"text": "%s"}' % ("A" * 4_001)], "document 1: GroundingDocument invalid at text"),
])
def test_check_names_bad_grounding_and_the_fix(tmp_path, lines: list[str], fragment: str) -> None:
    grounding = tmp_path / "grounding.jsonl"
    grounding.write_text("\n".join(lines) + "\n")
    result = run("check", "Paris is in France.", "--grounding", str(grounding))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert fragment in result.stderr


def test_calibrate_rejects_rows_without_labels_or_with_one_class(tmp_path) -> None:
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text('{"claim": "Paris is in France.", "evidence": []}\n')
    one_class = tmp_path / "one_class.jsonl"
    one_class.write_text("".join(
        f'{{"id": "r{i}", "claim": "Claim {i}.", "label": "true", "evidence": []}}\n' for i in range(30)
    ))
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\x00\x01 not json\n")
    for path, fragment in ((unlabelled, "no label"), (one_class, "same label"), (junk, "not a JSON object")):
        result = run("calibrate", str(path))
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert len(lines) == 1 and fragment in lines[0], result.stderr
