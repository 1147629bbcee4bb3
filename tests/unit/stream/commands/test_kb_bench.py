"""``halluwatch kb bench`` prints a curve over the sizes asked for, each with its search times and memory."""

from __future__ import annotations

from pathlib import Path

import orjson

from stream.cli import main


def test_each_size_gets_its_latency_recall_and_memory(tmp_path: Path, capsys) -> None:
    out = tmp_path / "kb.json"
    assert main(["kb", "bench", "--docs", "300,1200", "--queries", "20", "--out", str(out)]) == 0
    rows = orjson.loads(out.read_bytes())["kb_search"]
    assert [r["documents"] for r in rows] == [300, 1200]
    for row in rows:
        assert row["queries"] == 20 and 0 < row["search_median_ms"] <= row["search_p95_ms"]
        # Queries are words of a stored document: it must nearly always come back.
        assert row["source_document_in_top6"] >= 0.9
        assert row["process_peak_rss_mb"] > 0
    printed = capsys.readouterr().out
    assert "1200 docs" in printed and "process peak memory" in printed


def test_a_bad_size_list_names_the_fix(capsys) -> None:
    assert main(["kb", "bench", "--docs", "ten"]) != 0
    assert "comma-separated counts" in capsys.readouterr().err
