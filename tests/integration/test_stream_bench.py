"""``halluwatch bench --scripted``: a real broker and worker process on the scripted model, every turn counted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]


def test_the_scripted_stream_bench_accounts_for_every_turn(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "stream.cli", "bench", "--scripted", "--conversations", "12", "--turns-per-conversation",
         "4", "--timeout", "240", "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=400,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = orjson.loads(out.read_bytes())
    assert report["turns"] == 48 and report["assistant_turns"] == 24
    assert report["verdicts"] == 24 and report["dead_letters"] == 0
    assert 0 < report["alerts"] < 24  # the script calls about one claim in five false
    assert report["turns_per_s"] > 0 and report["worker_cpu_ms_per_turn"] > 0
    assert "turns/s" in result.stdout and "worker CPU per turn" in result.stdout


def test_the_paced_bench_reports_a_latency_for_every_turn(tmp_path: Path) -> None:
    out = tmp_path / "paced.json"
    result = subprocess.run(
        [sys.executable, "-m", "stream.cli", "bench", "--paced", "4", "--scripted", "--repeat", "3", "--timeout", "240",
         "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=400,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = orjson.loads(out.read_bytes())
    assert report["turns"] == 18 and report["rate"] == 4.0  # the six bundled turns, three times
    assert len(report["verdict_latencies"]) == 18 and all(x > 0 for x in report["verdict_latencies"])
    assert len(report["model_seconds"]) == 18
    # The scripted model calls some bundled claims false: each of those turns has its alert latency.
    assert 0 < len(report["alert_latencies"]) <= 18 and all(x > 0 for x in report["alert_latencies"])
    assert report["verdict_latency_median_s"] <= report["verdict_latency_max_s"]
    assert "turn -> verdict" in result.stdout and "18 of 18 turns" in result.stdout
