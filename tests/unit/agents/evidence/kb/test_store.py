"""The local knowledge base on a fixture corpus: import, search ranking, as-of, supersede, history, CLI errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.errors import KnowledgeBaseError
from agents.evidence.kb.documents import NewDocument
from agents.evidence.kb.importer import read_import_file
from agents.evidence.kb.store import KnowledgeBase

CORPUS = Path(__file__).resolve().parents[5] / "tests" / "support" / "data" / "kb_corpus.jsonl"
TODAY = "2026-12-03"
EVEREST_OLD, EVEREST_NEW, EIFFEL, EIFFEL_BLOG, AMAZON = 1, 2, 3, 4, 5


@pytest.fixture
def kb(tmp_path: Path) -> KnowledgeBase:
    base = KnowledgeBase(tmp_path / "kb.sqlite3")
    base.add(read_import_file(CORPUS), ingested_at=TODAY)
    yield base
    base.close()


def ids(hits) -> list[int]:
    return [h.document.doc_id for h in hits]


def test_import_counts_and_reports_bad_rows_by_line(tmp_path: Path) -> None:
    kb = KnowledgeBase(tmp_path / "kb.sqlite3")
    report = kb.add(read_import_file(CORPUS), ingested_at=TODAY)
    assert (report.added, report.duplicates) == (5, 1)
    assert [(b.line, b.reason) for b in report.bad] == [
        (6, "not a JSON object"),
        (7, "no text"),
        (8, "published_at='yesterday' is not a date (use YYYY-MM-DD or unknown)"),
        (10, "ingested_at 2019-01-01 is before published_at 2020-01-02"),
    ]
    stats = kb.stats()
    assert (stats.documents, stats.current, stats.primary, stats.undated) == (5, 5, 2, 1)
    assert (stats.oldest, stats.newest, stats.last_ingested) == ("2005-03-01", "2023-05-02", "2023-06-01")
    # Importing the same file again adds nothing.
    again = kb.add(read_import_file(CORPUS), ingested_at=TODAY)
    assert (again.added, again.duplicates) == (0, 6)


def test_import_that_fails_half_way_leaves_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "broken.jsonl"
    good_line = b'{"text": "The Nile flows north.", "published_at": "2020-01-01"}\n'
    bad.write_bytes(good_line * 2 + b'{"text": "caf\xe9 \xff\xfe"}\n')
    kb = KnowledgeBase(tmp_path / "kb.sqlite3")
    with pytest.raises(KnowledgeBaseError, match="not UTF-8"):
        kb.add(read_import_file(bad), ingested_at=TODAY)
    assert kb.stats().documents == 0
    assert kb.search("Nile flows north") == []


def test_csv_import_and_header_check(tmp_path: Path) -> None:
    good = tmp_path / "docs.csv"
    good.write_text('text,url,published_at,primary\n"The Nile flows north, into the sea.",https://nile.example,2020-02-03,yes\n'
                    "Only two,fields\nThe Danube flows east.,https://danube.example,2021-01-01,no\n")
    kb = KnowledgeBase(tmp_path / "kb.sqlite3")
    report = kb.add(read_import_file(good), ingested_at=TODAY)
    assert report.added == 2 and [(b.line, b.reason) for b in report.bad] == [(3, "2 fields but the header has 4")]
    nile = kb.find("https://nile.example")[0]
    assert (nile.text, nile.published_at, nile.primary, nile.ingested_at) == (
        "The Nile flows north, into the sea.", "2020-02-03", True, TODAY)
    header = tmp_path / "bad.csv"
    header.write_text("body,link\nx,y\n")
    with pytest.raises(KnowledgeBaseError, match=r"bad.csv:1: bad CSV header \(unknown column\(s\) body, link\)"):
        kb.add(read_import_file(header), ingested_at=TODAY)
    assert kb.stats().documents == 2


def test_search_boosts_primary_sources_and_relevance(kb: KnowledgeBase) -> None:
    hits = kb.search("The Eiffel Tower was completed in 1889.", today=TODAY)
    assert ids(hits) == [EIFFEL, EIFFEL_BLOG]
    assert [h.primary for h in hits] == [True, False]
    # A source the sources stage named counts as primary even when not flagged at import.
    hinted = kb.search("The Eiffel Tower was completed in 1889.", today=TODAY, primary_hints=["Example Travel"])
    assert [h.primary for h in hinted] == [True, True]


def test_search_ranks_by_date_proximity_to_the_claim(kb: KnowledgeBase) -> None:
    now = {h.document.doc_id: h for h in kb.search("Mount Everest height metres", today=TODAY)}
    then = {h.document.doc_id: h for h in kb.search("Mount Everest height metres", today=TODAY, claim_date="2005-03-01")}
    assert then[EVEREST_OLD].proximity == 1.0  # published on the claim date
    assert now[EVEREST_OLD].proximity == round(1 / (1 + 7947 / 365), 4)  # 2005-03-01 to 2026-12-03
    assert then[EVEREST_OLD].score > now[EVEREST_OLD].score
    assert then[EVEREST_NEW].proximity == now[EVEREST_NEW].proximity  # nearer to now than to 2005 either way
    # The undated document is neither near nor far.
    assert kb.search("Amazon River Atlantic", today=TODAY)[0].proximity == 0.5


def test_min_coverage_drops_documents_sharing_one_word(kb: KnowledgeBase) -> None:
    assert sorted(ids(kb.search("Paris hosts the Olympic Games", today=TODAY))) == [EIFFEL, EIFFEL_BLOG]
    assert kb.search("Paris hosts the Olympic Games", today=TODAY, min_coverage=0.5) == []


def test_as_of_returns_what_the_knowledge_base_knew(kb: KnowledgeBase) -> None:
    assert ids(kb.search("Mount Everest", as_of="2009-12-31")) == []
    assert ids(kb.search("Mount Everest", as_of="2015-01-01")) == [EVEREST_OLD]
    assert sorted(ids(kb.search("Mount Everest", as_of="2021-06-01"))) == [EVEREST_OLD, EVEREST_NEW]


def test_supersede_keeps_the_old_document_and_as_of_still_sees_it(kb: KnowledgeBase) -> None:
    newer = NewDocument(text="Mount Everest was re-measured in 2025 at 8,849.1 metres.", url="https://www.dos.gov.np/everest-2025",
                        title="Everest 2025", publisher="", published_at="2025-06-01", ingested_at=None, primary=True)
    new = kb.supersede(EVEREST_NEW, newer, "more_recent: a later survey", when="2026-01-10")
    assert new.doc_id == 6 and new.ingested_at == "2026-01-10"
    old = kb.get(EVEREST_NEW)
    assert (old.superseded_by, old.superseded_at, old.supersede_reason) == (6, "2026-01-10", "more_recent: a later survey")
    assert ids(kb.search("Mount Everest", today=TODAY)) == [6, EVEREST_OLD]
    assert sorted(ids(kb.search("Mount Everest", as_of="2025-12-31"))) == [EVEREST_OLD, EVEREST_NEW]
    assert sorted(ids(kb.search("Mount Everest", as_of="2026-01-10"))) == [EVEREST_OLD, 6]
    assert kb.stats().superseded == 1
    # The chain from either end, by URL or id.
    chain = kb.history("https://www.dos.gov.np/everest-height")
    assert [[d.doc_id for d in c] for c in chain] == [[EVEREST_NEW, 6]]
    assert [[d.doc_id for d in c] for c in kb.history("6")] == [[EVEREST_NEW, 6]]
    # A second supersede of the same document is ignored: the first replacement stands.
    kb.supersede(EVEREST_NEW, NewDocument.from_passage(kb.get(EVEREST_OLD).passage(TODAY, 0.0)), "other", "2026-02-01")
    assert kb.get(EVEREST_NEW).superseded_by == 6


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream.cli", *args], capture_output=True, text=True, timeout=120)


def test_cli_add_search_history_and_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.sqlite3")
    added = run_cli("kb", "add", str(CORPUS), "--kb", db)
    assert added.returncode == 0
    assert "5 added, 1 already there, 4 bad rows skipped" in added.stdout
    assert f"{CORPUS}:8: published_at='yesterday'" in added.stdout
    found = run_cli("kb", "search", "Mount Everest", "--as-of", "2015-01-01", "--kb", db)
    assert found.returncode == 0 and found.stdout.startswith("#1 ") and "#2 " not in found.stdout
    for args, fragment in (
        (["kb", "search", "Everest", "--as-of", "last year", "--kb", db], "--as-of 'last year' is not a date"),
        (["kb", "add", str(tmp_path / "missing.jsonl"), "--kb", db], "no such file"),
        (["kb", "search", "Everest", "--kb", str(tmp_path / "none.sqlite3")], "no knowledge base at"),
        (["kb", "history", "https://nowhere.example", "--kb", db], "no document with URL or id"),
    ):
        result = run_cli(*args)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and len(lines) == 1 and fragment in lines[0], result.stderr


def test_words_in_most_documents_do_not_select_candidates(tmp_path: Path) -> None:
    kb = KnowledgeBase(tmp_path / "kb.sqlite3")
    rows = [(i, {"text": f"Report number {i} about harbour traffic.", "url": f"https://r.example/{i}"}) for i in range(1, 601)]
    rows.append((601, {"text": "The harbour lighthouse was rebuilt in 1902.", "url": "https://lighthouse.example"}))
    kb.add(rows, ingested_at=TODAY)
    # "harbour" is in every document: only the rarer words pick candidates, and the coverage still counts it.
    assert kb.selective_query("harbour lighthouse rebuilt") == '"lighthouse" OR "rebuilt"'
    assert [h.document.url for h in kb.search("harbour lighthouse rebuilt", today=TODAY)] == ["https://lighthouse.example"]
    # Every word common: the rarest ones must appear together.
    assert kb.selective_query("harbour traffic report") == '"harbour" AND "report"'
    kb.close()


def test_cli_history_and_stats(kb: KnowledgeBase) -> None:
    newer = NewDocument(text="Mount Everest was re-measured in 2025 at 8,849.1 metres.", url="https://www.dos.gov.np/everest-2025",
                        title="Everest 2025", publisher="", published_at="2025-06-01", ingested_at=None, primary=True)
    kb.supersede(EVEREST_NEW, newer, "more_recent: a later survey", when="2026-01-10")
    history = run_cli("kb", "history", "https://www.dos.gov.np/everest-height", "--kb", str(kb.path))
    assert history.returncode == 0
    assert history.stdout.splitlines() == [
        "#2 published 2020-12-08, ingested 2021-01-05: Height of Mount Everest https://www.dos.gov.np/everest-height",
        "  superseded on 2026-01-10 by #6: more_recent: a later survey",
        "#6 published 2025-06-01, ingested 2026-01-10: Everest 2025 https://www.dos.gov.np/everest-2025",
        "  (current)",
    ]
    stats = run_cli("kb", "stats", "--kb", str(kb.path))
    assert "documents: 6 (5 current, 1 superseded, 3 primary sources, 1 undated)" in stats.stdout
