"""Load with faults: 2,000 turns over 200 conversations, two scripted workers, one killed -9 and restarted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.soak
def test_a_kill_and_two_rebalances_lose_nothing_and_double_nothing(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    result = subprocess.run([sys.executable, "-m", "stream.cli", "soak", "--out", str(out)],
                            capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert out.exists(), result.stderr[-3000:]
    counts = orjson.loads(out.read_bytes())
    assert counts["turns_sent"] == 2000 and counts["assistant_turns"] == 1000
    assert counts["verified"] == 1000 and counts["missing"] == 0
    assert counts["turns_with_two_alerts"] == 0 and counts["out_of_order"] == 0
    assert counts["dead_letters"] == 0
    assert 0 < counts["killed_at_verdicts"] < 1000  # the kill happened mid-run
    assert result.returncode == 0 and "PASSED" in result.stdout


@pytest.mark.soak
def test_a_sigterm_drains_the_worker_with_no_turn_lost_and_no_alert_sent_twice(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    result = subprocess.run([sys.executable, "-m", "stream.cli", "soak", "--stop", "term", "--conversations", "100",
                             "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert out.exists(), result.stderr[-3000:]
    counts = orjson.loads(out.read_bytes())
    assert counts["stop_signal"] == "SIGTERM" and counts["stopped_exit_code"] == 0
    assert counts["verified"] == counts["assistant_turns"] == 500 and counts["missing"] == 0
    assert counts["alerts_delivered_twice"] == 0 and counts["turns_with_two_alerts"] == 0
    assert counts["out_of_order"] == 0 and counts["dead_letters"] == 0
    assert 0 < counts["killed_at_verdicts"] < 500
    assert result.returncode == 0 and "PASSED" in result.stdout
