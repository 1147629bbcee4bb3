"""The acceptance example of `halluwatch check`, through the real CLI and the real model."""

import json
import subprocess
import sys
from pathlib import Path


def test_check_finds_the_wrong_city(tmp_path: Path) -> None:
    evidence = tmp_path / "evidence.jsonl"
    evidence.write_text(json.dumps({
        "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was completed in 1889.",
        "url": "https://www.toureiffel.paris/en/the-monument/history",
        "title": "History of the Eiffel Tower",
        "published_at": "2023-05-01",
    }) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "stream.cli", "check", "The Eiffel Tower is in Berlin and was finished in 1889.",
         "--evidence", str(evidence), "--json"],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    verdicts = out["verdict"]["claim_verdicts"]
    assert len(verdicts) == 2
    by_text = {v["claim_text"]: v["label"] for v in verdicts}
    assert sorted(by_text.values()) == ["false", "true"]
    assert by_text[next(t for t in by_text if "Berlin" in t)] == "false"
    assert out["verdict"]["label"] == "false"
    assert "Paris" in out["correction"]["corrected_text"]
    assert "Berlin" not in out["correction"]["corrected_text"]
    assert out["correction"]["errors"][0]["citations"][0]["published_at"] == "2023-05-01"


def test_check_judges_a_grounded_answer_against_its_documents(tmp_path: Path) -> None:
    """--grounding: the documents the bot answered from are the evidence, decided by the grounded fit."""
    grounding = tmp_path / "grounding.jsonl"
    grounding.write_text(json.dumps({
        "text": "Hartland Swamp is a wetland in Niagara County, New York, east of the village of Middleport.",
        "url": "https://wiki.example/hartland-swamp", "title": "Hartland Swamp",
    }) + "\n")
    context = tmp_path / "context.jsonl"
    context.write_text(json.dumps({"role": "user", "text": "Which county is Hartland Swamp in?"}) + "\n")
    verdicts = {}
    for answer in ("Niagara County.", "Erie County."):
        result = subprocess.run(
            [sys.executable, "-m", "stream.cli", "check", answer, "--grounding", str(grounding), "--context",
             str(context), "--json"], capture_output=True, text=True, timeout=600,
        )
        assert result.returncode == 0, result.stderr
        out = json.loads(result.stdout)
        assert [p["retriever"] for p in out["verdict"]["evidence"]["passages"]] == ["grounding"]
        verdicts[answer] = out["verdict"]["label"]
    assert verdicts == {"Niagara County.": "true", "Erie County.": "false"}


def test_check_with_the_judge_reads_its_letters_and_decides_with_its_calibration(tmp_path: Path) -> None:
    """--judge qwen-1.5b: the larger judge reads each claim beside the retrieved evidence; its calibration decides."""
    evidence = tmp_path / "evidence.jsonl"
    evidence.write_text(json.dumps({
        "text": "Penicillin was discovered by Alexander Fleming in 1928 at St Mary's Hospital in London.",
        "url": "https://www.example.org/penicillin", "title": "Penicillin", "published_at": "2020-03-01",
    }) + "\n")
    labels = {}
    for claim in ("Penicillin was discovered by Alexander Fleming in 1928.", "Penicillin was discovered in 1950."):
        result = subprocess.run([sys.executable, "-m", "stream.cli", "check", claim, "--evidence", str(evidence),
                                 "--judge", "qwen-1.5b", "--json"], capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        (verdict,) = json.loads(result.stdout)["verdict"]["claim_verdicts"]
        assert set(verdict["fit"]["judge"]) == {"true", "false", "unverifiable"}
        assert verdict["fit"]["judge_each"] == verdict["fit"]["judge"], "one passage: the same reading"
        labels[claim] = verdict["label"]
    assert labels == {"Penicillin was discovered by Alexander Fleming in 1928.": "true",
                      "Penicillin was discovered in 1950.": "false"}
    # Without evidence the judge has nothing to read beside the claim: it is not asked, and the calibration's
    # fit for such claims decides.
    result = subprocess.run([sys.executable, "-m", "stream.cli", "check", "Penicillin was discovered in 1950.",
                             "--judge", "qwen-1.5b", "--json"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    (verdict,) = json.loads(result.stdout)["verdict"]["claim_verdicts"]
    assert verdict["fit"]["judge"] is None and verdict["fit"]["judge_each"] is None
    assert verdict["label"] == "unverifiable"
