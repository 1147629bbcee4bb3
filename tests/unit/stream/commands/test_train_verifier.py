"""train-verifier: the shipped verifier and sufficiency rater are what the command fits on the public sets' even rows."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[4]
SHIPPED = ROOT / "agents" / "scoring" / "verify_calibration.json"
SHIPPED_RATER = ROOT / "agents" / "scoring" / "sufficiency_rater.json"


def leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Every number and string of a JSON value by its path, so two fits compare leaf by leaf."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in leaves(item, f"{path}.{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in leaves(item, f"{path}[{i}]").items()}
    return {path: value}


def test_the_saved_judgements_reproduce_the_shipped_verifier(tmp_path: Path) -> None:
    out, rater = tmp_path / "fit.json", tmp_path / "rater.json"
    done = subprocess.run([sys.executable, "-m", "stream.cli", "train-verifier", "--judgements", "docs/results",
                           "--data", str(tmp_path / "nowhere"), "--out", str(out), "--sufficiency-out", str(rater)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for made, shipped_file in ((out, SHIPPED), (rater, SHIPPED_RATER)):
        fitted, shipped = orjson.loads(made.read_bytes()), orjson.loads(shipped_file.read_bytes())
        # The same weights, up to the last bits: numpy's summation order differs between CPUs (AVX2 vs AVX-512).
        fitted_leaves, shipped_leaves = leaves(fitted), leaves(shipped)
        assert fitted_leaves.keys() == shipped_leaves.keys()
        for path, value in shipped_leaves.items():
            if isinstance(value, float):
                assert fitted_leaves[path] == pytest.approx(value, rel=1e-9, abs=1e-12), path
            else:
                assert fitted_leaves[path] == value, path
    # The rater's held-out table: off-topic evidence (the atomic claims' other-row passages) is told apart.
    atomic = next(line.split() for line in done.stdout.splitlines() if line.startswith("atomic ") and len(line.split()) == 4)
    assert float(atomic[3]) > 0.9
    held_out = [line.split()[0] for line in done.stdout.splitlines() if line.split()[1:2] == ["pipeline"]]
    assert held_out == ["halueval", "paraphrase", "averitec", "atomic"]  # one odd-row figure per training set


def test_without_data_or_judgements_it_names_the_missing_file(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "stream.cli", "train-verifier", "--data", str(tmp_path),
                           "--out", str(tmp_path / "fit.json")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "halueval-qa/dev-public.jsonl is missing" in done.stderr and "--data" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "fit.json").exists()
