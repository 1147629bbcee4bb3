"""The retriever interface: merging, de-duplication, chronological selection, failures, the cache."""

from __future__ import annotations

import dataclasses

from agents.errors import RetrievalError
from agents.evidence.cache import RetrievalCache
from agents.evidence.composite import CompositeRetriever, merge, select
from agents.evidence.passages import assemble_evidence, recency_note
from agents.evidence.retriever import GivenPassages, PassageIndex, RetrievalRequest, RetrievalResult
from agents.model.prompting import PromptTemplate
from agents.stages.retrieve import retrieve
from schemas import Claim, ClaimSet, Passage, ids

TODAY = "2026-12-03"


def passage(text: str, url: str, published: str | None, score: float, retriever: str = "kb", primary: bool = False) -> Passage:
    return Passage(passage_id=ids.passage_id(url, text), text=text, url=url, title=url, published_at=published,
                   retrieved_at=TODAY, retriever=retriever, primary=primary, score=score)


def request(*texts: str, claim_date: str | None = "2019-05-01") -> RetrievalRequest:
    claims = tuple(Claim(claim_id=f"c{i}", index=i, text=t) for i, t in enumerate(texts))
    return RetrievalRequest(claims=claims, claim_date=claim_date, sources=(), today=TODAY)


@dataclasses.dataclass
class Fixed:
    """A retriever answering from a list (a double for the composite's own logic)."""

    name: str
    passages: tuple[Passage, ...] = ()
    error: str = ""
    reason: str = ""
    calls: int = 0

    async def retrieve(self, req: RetrievalRequest) -> RetrievalResult:
        self.calls += 1
        if self.error:
            raise RetrievalError(self.error)
        return RetrievalResult(self.name, self.passages, self.reason)


def test_merge_drops_duplicates_by_id_and_by_text_keeping_the_best_copy() -> None:
    a = passage("Everest is 8,848.86 m high.", "https://a.example", None, 0.4, "kb")
    same_id = dataclasses.replace(a, retriever="web", score=0.9, published_at="2020-12-08")
    same_text = passage("everest IS 8,848.86 m high", "https://b.example", None, 0.5, "web", primary=True)
    other = passage("Everest is in Nepal.", "https://c.example", "2019-01-01", 0.3)
    merged = merge([a, same_id, same_text, other])
    assert len(merged) == 2
    kept = next(p for p in merged if p.passage_id == a.passage_id)
    assert (kept.score, kept.retriever, kept.published_at, kept.primary) == (0.9, "web", "2020-12-08", True)


def test_selection_keeps_the_claim_date_and_the_present_and_orders_in_time() -> None:
    passages = [
        passage("p2010", "u1", "2010-01-01", 0.9),
        passage("p2011", "u2", "2011-01-01", 0.8),
        passage("p2019", "u3", "2019-04-01", 0.1),  # nearest the claim date, low score
        passage("p2026", "u4", "2026-11-01", 0.05),  # the newest, lowest score
        passage("undated", "u5", None, 0.95),
    ]
    chosen = select(passages, claim_date="2019-05-01", today=TODAY, limit=3)
    assert [p.text for p in chosen] == ["p2019", "p2026", "undated"]
    everything = select(passages, claim_date="2019-05-01", today=TODAY)
    assert [p.text for p in everything] == ["p2010", "p2011", "p2019", "p2026", "undated"]


def test_assemble_keeps_the_best_before_ordering_so_the_newest_survive() -> None:
    claimset = ClaimSet(claimset_id="cs", conversation_id="c", turn_id="t", bot="", turn_text="x", turn_timestamp=0,
                        claim_date=None, context=(), claims=(), skipped=())
    many = [passage(f"old {i}", f"u{i}", f"2000-01-{i + 1:02d}", 0.1) for i in range(24)]
    newest = passage("new", "un", "2026-01-01", 0.9)
    evidence = assemble_evidence(claimset, many + [newest])
    assert len(evidence.passages) == 24 and evidence.passages[-1].text == "new"
    assert [p.published_at for p in evidence.passages] == sorted(p.published_at for p in evidence.passages)


def test_recency_note() -> None:
    assert recency_note([passage("a", "u", "2026-06-01", 1)], TODAY) == ""
    assert recency_note([passage("a", "u", "2019-06-01", 1)], TODAY) == (
        "nothing recent found: the newest passage is from 2019-06-01, 2742 days before 2026-12-03")
    assert recency_note([passage("a", "u", None, 1)], TODAY).startswith("no dated passage")
    assert recency_note([], TODAY) == ""


async def test_composite_merges_retrievers_and_reports_a_failed_one() -> None:
    kb = Fixed("kb", (passage("Everest is 8,848 m.", "https://atlas.example", "2005-03-01", 0.7),))
    web = Fixed("web", (passage("Everest is 8,848.86 m.", "https://gov.example", "2020-12-08", 0.9, "web"),))
    broken = Fixed("web2", error="the page did not load within 20s")
    result = await CompositeRetriever([kb, web, broken]).retrieve(request("Everest is 8,848 m high."))
    assert [p.published_at for p in result.passages] == ["2005-03-01", "2020-12-08"]
    assert result.reason == "no evidence from web2: the page did not load within 20s"


async def test_cache_answers_identical_requests_within_the_window() -> None:
    now = [1000.0]
    lookups: list[bool] = []
    cache = RetrievalCache(ttl_seconds=60, clock=lambda: now[0], on_lookup=lookups.append)
    kb = Fixed("kb", (passage("Everest is 8,848 m.", "https://atlas.example", "2005-03-01", 0.7),))
    composite = CompositeRetriever([kb], cache)
    first = await composite.retrieve(request("Everest is 8,848 m high."))
    # The same claims up to case, spacing and end punctuation, the same date: from the cache.
    second = await composite.retrieve(request("everest is  8,848 m HIGH"))
    assert (first.from_cache, second.from_cache, kb.calls) == (False, True, 1)
    assert second.passages == first.passages
    # Another claim date is another request.
    await composite.retrieve(request("Everest is 8,848 m high.", claim_date="2020-01-01"))
    assert kb.calls == 2
    now[0] += 61  # the window has passed
    third = await composite.retrieve(request("Everest is 8,848 m high."))
    assert (third.from_cache, kb.calls) == (False, 3)
    assert (cache.hits, cache.misses, round(cache.hit_rate, 2)) == (1, 3, 0.25)
    assert lookups == [False, True, False, False]  # what the worker's metrics are told, in order


async def test_failed_looks_are_not_cached() -> None:
    cache = RetrievalCache(ttl_seconds=60)
    broken = Fixed("web", reason="the page refused the query (it says 'captcha'): blocked or rate-limited")
    composite = CompositeRetriever([broken], cache)
    await composite.retrieve(request("Everest is high."))
    await composite.retrieve(request("Everest is high."))
    assert broken.calls == 2


async def test_retrieve_stage_notes_what_is_missing(scripted) -> None:
    runner, _ = scripted({"sources": '{"sources":[{"kind":"agency","where":"Survey Department","reason":"official"}]}'})
    index = PassageIndex([passage("Mount Everest is 8,848 metres high.", "https://atlas.example", "2005-03-01", 0.0)])
    claimset = ClaimSet(claimset_id="cs", conversation_id="c", turn_id="t", bot="", turn_text="x", turn_timestamp=0,
                        claim_date="2019-05-01", context=(), skipped=(),
                        claims=(Claim(claim_id="c1", index=0, text="Mount Everest is 8,848 metres high."),))
    evidence = await retrieve(claimset, index, runner, PromptTemplate.load("sources"), now=TODAY)
    assert [p.url for p in evidence.passages] == ["https://atlas.example"]
    assert evidence.claimset.sources[0].where == "Survey Department"
    assert evidence.note == "nothing recent found: the newest passage is from 2005-03-01, 7947 days before 2026-12-03"
    nothing = await retrieve(claimset, PassageIndex([]), runner, PromptTemplate.load("sources"), now=TODAY)
    assert nothing.passages == () and nothing.note == "nothing matched in passages"


def test_worker_retrieval_from_settings(tmp_path, scripted) -> None:
    from pathlib import Path

    from stream.retrieval import build_retrieval, web_config
    from stream.settings import Settings

    evidence = Path(__file__).resolve().parents[4] / "stream" / "examples" / "demo_evidence.jsonl"
    settings = Settings.from_env({
        "HALLUWATCH_DATA_DIR": str(tmp_path), "HALLUWATCH_EVIDENCE": str(evidence),
        "HALLUWATCH_RETRIEVAL_CACHE_SECONDS": "30", "HALLUWATCH_WEB_TIMEOUT": "7",
        "HALLUWATCH_WEB_ANSWER_SELECTOR": "#answer",
    })
    assert settings.kb_file == tmp_path / "kb.sqlite3" and not settings.web_retriever
    runner, _ = scripted({})
    first = build_retrieval(settings, runner)
    assert [(r.added, r.duplicates) for r in first.imported] == [(7, 0)]
    assert first.web is None and first.kb_updater is None and first.cache.ttl_seconds == 30
    first.close()
    again = build_retrieval(settings, runner)
    assert [(r.added, r.duplicates) for r in again.imported] == [(0, 7)]
    again.close()
    config = web_config(settings.override(web_retriever=True))
    assert (config.timeout, config.answer_selector, config.url_template) == (
        7.0, "#answer", "https://www.google.com/search?udm=50&hl=en&q={query}")
    on = Settings.from_env({"HALLUWATCH_WEB_RETRIEVER": "on", "HALLUWATCH_KB": str(tmp_path / "other.sqlite3")})
    assert on.web_retriever and on.kb_file == tmp_path / "other.sqlite3"


async def test_knowledge_base_retriever_on_the_demo_evidence(tmp_path) -> None:
    from pathlib import Path

    from agents.evidence.kb.importer import read_import_file
    from agents.evidence.kb.retriever import KnowledgeBaseRetriever
    from agents.evidence.kb.store import KnowledgeBase

    kb = KnowledgeBase(tmp_path / "kb.sqlite3")
    kb.add(read_import_file(Path(__file__).resolve().parents[4] / "stream" / "examples" / "demo_evidence.jsonl"), TODAY)
    result = await KnowledgeBaseRetriever(kb).retrieve(request("The Eiffel Tower is in Berlin.", "Neil Armstrong walked on the Moon in 1969."))
    urls = [p.url for p in result.passages]
    assert sorted(urls[:2]) == ["https://www.nasa.gov/apollo11", "https://www.toureiffel.paris/en/the-monument/history"]
    assert "https://www.berlin.de/mauerfall" in urls  # shares "Berlin": kept, ranked lower
    assert all(p.retriever == "kb" and p.retrieved_at == TODAY for p in result.passages)
    assert (await KnowledgeBaseRetriever(kb).retrieve(request("Quantum chromodynamics rules."))).reason == (
        "nothing matched in the knowledge base")
    kb.close()


async def test_without_a_sources_prompt_retrieval_makes_no_model_call(scripted) -> None:
    runner, backend = scripted({})  # no answers at all: any model call would fail the test
    index = PassageIndex([passage("Mount Everest is 8,848 metres high.", "https://atlas.example", "2005-03-01", 0.0)])
    claimset = ClaimSet(claimset_id="cs", conversation_id="c", turn_id="t", bot="", turn_text="x", turn_timestamp=0,
                        claim_date=None, context=(), skipped=(),
                        claims=(Claim(claim_id="c1", index=0, text="Mount Everest is 8,848 metres high."),))
    evidence = await retrieve(claimset, index, runner, None, now=TODAY)
    assert [p.url for p in evidence.passages] == ["https://atlas.example"]
    assert backend.prompts == [] and evidence.claimset.sources == ()
    assert [t.stage for t in evidence.claimset.timings + evidence.timings] == ["retrieve"]


def test_the_sources_stage_runs_only_with_the_web_retriever_unless_asked() -> None:
    from stream.build import build_pipeline
    from stream.settings import Settings

    assert build_pipeline(Settings()).find_sources is False  # knowledge base only: its hints changed nothing
    assert build_pipeline(Settings(web_retriever=True)).find_sources is True  # they direct the web queries
    assert build_pipeline(Settings.from_env({"HALLUWATCH_FIND_SOURCES": "on"})).find_sources is True
    assert build_pipeline(Settings.from_env({"HALLUWATCH_WEB_RETRIEVER": "on",
                                             "HALLUWATCH_FIND_SOURCES": "off"})).find_sources is False


async def test_given_passages_are_the_evidence_whatever_the_claims_say(scripted) -> None:
    # `halluwatch check --evidence` and the benchmarks: the caller's passages, unranked and unfiltered, in time order.
    runner, backend = scripted({})
    given = [passage("Lima is in Peru.", "https://b.example", "2021-01-01", 0.0),
             passage("Unrelated.", "https://a.example", "2005-03-01", 0.0)]
    claimset = ClaimSet(claimset_id="cs", conversation_id="c", turn_id="t", bot="", turn_text="x", turn_timestamp=0,
                        claim_date=None, context=(), skipped=(),
                        claims=(Claim(claim_id="c1", index=0, text="Mount Everest is 8,848 metres high."),))
    evidence = await retrieve(claimset, GivenPassages(given), runner, None, now=TODAY)
    assert [p.url for p in evidence.passages] == ["https://a.example", "https://b.example"]
    assert evidence.note.startswith("nothing recent found: the newest passage is from 2021-01-01")
    closed_book = await retrieve(claimset, GivenPassages([]), runner, None, now=TODAY)
    assert closed_book.passages == () and closed_book.note == "no evidence found" and backend.prompts == []
