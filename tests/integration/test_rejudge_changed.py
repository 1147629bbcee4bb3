"""`eval --judgements --rejudge-changed`: after a segmentation change, the real model judges again only the saved
cases whose claims changed, and the rest of the file is kept as it was."""

import subprocess
import sys
from pathlib import Path

import orjson

from agents.evaluation.harness import CaseResult, load_judgements

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "docs" / "results" / "paraphrase-judgements.json"


def said(case: CaseResult) -> tuple:
    """What the model said of a case, without the label decided from it (re-decided under today's calibration)."""
    return case.case_id, case.position, case.judged, case.whole


def test_the_case_whose_saved_claims_are_out_of_date_is_judged_again_and_comes_back_as_shipped(tmp_path: Path) -> None:
    # Stand in for a rule change: one case's saved claim is not what segmentation makes of its turn today.
    raw = orjson.loads(SHIPPED.read_bytes())
    raw["cases"][1]["judged"][0]["evidence"]["claimset"]["claims"][0]["text"] = "A claim segmentation no longer writes."
    (tmp_path / "old.json").write_bytes(orjson.dumps(raw))
    done = subprocess.run([sys.executable, "-m", "stream.cli", "eval", "paraphrase",
                           "--judgements", str(tmp_path / "old.json"),
                           "--answers", "docs/results/segment-answers-paraphrase.jsonl", "--rejudge-changed",
                           "--save-judgements", str(tmp_path / "new.json"), "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    shipped, old, new = (load_judgements(p) for p in (SHIPPED, tmp_path / "old.json", tmp_path / "new.json"))
    assert f"1 of 120 cases have other claims today; judging them again: {old.cases[1].case_id}" in done.stdout
    # The model (deterministic, same prompts) says again what it said when the shipped file was made.
    again, expected = new.cases[1], shipped.cases[1]
    assert again.position == expected.position
    assert [t.evidence.claimset.claims for t in again.judged] == [t.evidence.claimset.claims for t in expected.judged]
    assert [[j.verdict.label for j in t.judgements] for t in again.judged] == \
        [[j.verdict.label for j in t.judgements] for t in expected.judged]
    # Every other case holds the saved judgements, untouched.
    assert [said(c) for i, c in enumerate(new.cases) if i != 1] == [said(c) for i, c in enumerate(old.cases) if i != 1]
    assert new.prompt_digest == shipped.prompt_digest
