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
