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
