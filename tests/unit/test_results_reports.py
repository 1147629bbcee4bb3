"""The reports in docs/results that are re-decided from saved judgements print today what their files say.

Each report's first line holds the command that made it. Those that re-decide saved judgements run in seconds,
so a refit of a calibration, the rater or the selective regression that is not followed by a re-run of the
reports shows here (session 32 found the DiaHalu report's selective areas stale that way, by hand).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


def command(report: Path) -> list[str] | None:
    """The report's own command, when it only re-decides saved judgements (no model run, nothing saved)."""
    found = re.search(r"(halluwatch eval [^;]*)$", report.read_text().splitlines()[0])
    if found is None:
        return None
    words = shlex.split(found.group(1))
    if "--judgements" not in words or {"--save-judgements", "--rejudge-changed", "--fit-calibration"} & set(words):
        return None
    if "--out" in words:  # the JSON beside it is not this test's to write
        at = words.index("--out")
        del words[at : at + 2]
    return words[1:]


REPORTS = [p for p in sorted(RESULTS.glob("eval-*.txt")) if command(p) is not None]


def printed(text: str) -> list[str]:
    """The report's lines, without the comment lines above it and the note of the file it wrote."""
    return [line for line in text.splitlines() if not line.startswith(("#", "wrote "))]


def test_the_re_decided_reports_are_found() -> None:
    assert {p.name for p in REPORTS} >= {"eval-averitec.txt", "eval-diahalu.txt", "eval-halueval.txt",
                                         "eval-averitec-judge-qwen-1.5b.txt"}


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is not beside the checkout")
@pytest.mark.parametrize("report", REPORTS, ids=[p.name for p in REPORTS])
def test_a_report_re_decided_from_saved_judgements_prints_what_its_file_says(report: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "stream.cli", *command(report), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert printed(done.stdout) == printed(report.read_text()), (
        f"{report.name} is not what its command prints today: run it again (its first line) and keep the output")
