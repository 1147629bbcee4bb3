"""train-verifier: the shipped verifier is what the command fits on the public sets' even rows."""

import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[4]
SHIPPED = ROOT / "agents" / "scoring" / "verify_calibration.json"


def test_the_saved_judgements_reproduce_the_shipped_verifier(tmp_path: Path) -> None:
    out = tmp_path / "fit.json"
    done = subprocess.run([sys.executable, "-m", "stream.cli", "train-verifier", "--judgements", "docs/results",
                           "--data", str(tmp_path / "nowhere"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    fitted, shipped = orjson.loads(out.read_bytes()), orjson.loads(SHIPPED.read_bytes())
    assert fitted == shipped
    held_out = [line.split()[0] for line in done.stdout.splitlines() if line.split()[1:2] == ["pipeline"]]
    assert held_out == ["halueval", "averitec", "atomic"]  # one odd-row figure per training set


def test_without_data_or_judgements_it_names_the_missing_file(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "stream.cli", "train-verifier", "--data", str(tmp_path),
                           "--out", str(tmp_path / "fit.json")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "halueval-qa/dev-public.jsonl is missing" in done.stderr and "--data" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "fit.json").exists()
