"""eval: the bundled paraphrase set needs no file, and its saved judgements re-decide without the model."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]


def test_eval_paraphrase_reads_the_bundled_rows_and_reports_the_held_out_half() -> None:
    done = subprocess.run([sys.executable, "-m", "stream.cli", "eval", "paraphrase",
                           "--judgements", "docs/results/paraphrase-judgements.json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("paraphrase: 120 rows")
    pipeline = next(line.split() for line in done.stdout.splitlines() if line.startswith("pipeline "))
    # Accuracy, macro-F1, then the same on the odd rows: the verifier must beat the majority class (0.5) there.
    assert float(pipeline[3]) > 0.5
    assert "grounded_paraphrase.jsonl" in done.stdout  # the grounded fit says what it was fitted on


def test_eval_segmentation_names_the_saved_turns_whose_claims_it_no_longer_makes(tmp_path: Path) -> None:
    import orjson

    def segmentation(judgements: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "stream.cli", "eval", "segmentation",
                               "agents/evaluation/examples/grounded_paraphrase.jsonl",
                               "--answers", "docs/results/segment-answers-paraphrase.jsonl",
                               "--judgements", str(judgements), "--quiet"],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)

    current = segmentation(ROOT / "docs/results/paraphrase-judgements.json")
    assert current.returncode == 0, current.stderr
    assert "paraphrase-judgements.json: 0 turns differ" in current.stdout

    saved = orjson.loads((ROOT / "docs/results/paraphrase-judgements.json").read_bytes())
    claimset = saved["cases"][0]["judged"][0]["evidence"]["claimset"]
    claimset["claims"][0]["text"] = "A claim segmentation never wrote."
    (tmp_path / "old.json").write_bytes(orjson.dumps(saved))
    old = segmentation(tmp_path / "old.json")
    assert old.returncode == 1
    assert "old.json: 1 turns differ" in old.stdout
    assert f"{claimset['conversation_id']} {claimset['turn_id']}: saved ['A claim segmentation never wrote.']" in old.stdout
