"""Retrieval benchmarks: ``halluwatch kb bench`` and ``halluwatch web bench``.

kb bench generates knowledge bases of the given sizes in a temporary
directory (synthetic documents over a fixed vocabulary, reproducible by
seed), then times searches as the retriever runs them: one claim-like query
(words taken from a random stored document), with a claim date, top 6,
minimum word coverage.

web bench serves the example answer page on a local port and times the web
retriever's queries with one reused browser, then with a new browser per
query; the ratio is what the pool saves.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import multiprocessing
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from agents.errors import KnowledgeBaseError
from agents.evaluation.metrics import percentile
from agents.evidence.kb.documents import Row
from agents.evidence.kb.retriever import MIN_COVERAGE
from agents.evidence.kb.store import KnowledgeBase
from agents.evidence.retriever import RetrievalRequest
from agents.evidence.web.retriever import WebConfig, WebRetriever
from agents.testing import example_site
from schemas import Claim
from stream.commands.common import dump_json
from stream.settings import Settings

SEED = 7
WORDS_PER_DOC = 60
QUERY_WORDS = 8


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    syllables = ["ka", "lo", "mi", "ter", "an", "sol", "ve", "ri", "don", "pa", "que", "str", "el", "or", "nu", "bi"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def synthetic_rows(n: int, rng: random.Random, vocab: list[str]) -> Iterator[Row]:
    # Zipf-like word choice: a few words are common, most are rare, as in real text.
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))
    start = 730_120  # ordinal of 2000-01-01
    for i in range(1, n + 1):
        words = rng.choices(vocab, cum_weights=cumulative, k=WORDS_PER_DOC)
        yield i, {
            "text": " ".join(words).capitalize() + f" Figure {rng.randint(1, 99_999)}.",
            "url": f"https://example.org/doc/{i}",
            "title": " ".join(words[:5]),
            "publisher": rng.choice(["Statistics Office", "Ministry of Health", "City Gazette", "Daily News"]),
            "published_at": _date(start + rng.randint(0, 9_800)),
            "primary": rng.random() < 0.1,
        }


def _date(ordinal: int) -> str:
    return dt.date.fromordinal(ordinal).isoformat()


def bench_size(n: int, queries: int, directory: Path) -> dict[str, Any]:
    rng = random.Random(SEED)
    vocab = vocabulary(rng)
    kb = KnowledgeBase(directory / f"bench-{n}.sqlite3")
    try:
        started = time.perf_counter()
        report = kb.add(synthetic_rows(n, rng, vocab), ingested_at="2026-01-01")
        import_s = time.perf_counter() - started
        if report.added != n:
            raise KnowledgeBaseError(f"the benchmark generated {n} documents but {report.added} were stored")
        sampled = [kb.get(rng.randint(1, n)) for _ in range(queries)]
        latencies: list[float] = []
        found = 0
        for doc in sampled:
            assert doc is not None
            words = doc.text.split()
            offset = rng.randint(0, max(0, len(words) - QUERY_WORDS))
            query = " ".join(words[offset: offset + QUERY_WORDS])
            t = time.perf_counter()
            hits = kb.search(query, limit=6, claim_date=doc.published_at, today="2026-12-01",
                             min_coverage=MIN_COVERAGE)
            latencies.append(time.perf_counter() - t)
            found += any(h.document.doc_id == doc.doc_id for h in hits)
        stats = kb.stats()
    finally:
        kb.close()
    return {
        "documents": n,
        "queries": queries,
        "import_s": round(import_s, 2),
        "import_docs_per_s": round(n / import_s),
        "size_mb": round(stats.size_bytes / 1e6, 1),
        "search_median_ms": round(statistics.median(latencies) * 1000, 2),
        "search_p95_ms": round(percentile(latencies, 0.95) * 1000, 2),
        "source_document_in_top6": round(found / queries, 3),
        # This process built and searched only this knowledge base (see run_kb_bench).
        "process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def run_kb_bench(args: argparse.Namespace) -> int:
    try:
        sizes = [int(s) for s in args.docs.split(",") if s.strip()]
    except ValueError:
        raise KnowledgeBaseError(f"--docs {args.docs!r}: use comma-separated counts, e.g. --docs 10000,100000") from None
    if not sizes or min(sizes) < 1 or args.queries < 1:
        raise KnowledgeBaseError("--docs needs positive sizes and --queries at least 1")
    results = []
    with tempfile.TemporaryDirectory(prefix="halluwatch-kb-bench-") as tmp:
        for n in sizes:
            # A fresh process per size, so each figure of memory is that knowledge base's alone.
            with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
                result = pool.submit(bench_size, n, args.queries, Path(tmp)).result()
            results.append(result)
            print(f"{n:>9} docs: search median {result['search_median_ms']:.2f} ms, p95 {result['search_p95_ms']:.2f} ms"
                  f" ({result['queries']} queries); import {result['import_s']:.1f} s"
                  f" ({result['import_docs_per_s']} docs/s), {result['size_mb']} MB;"
                  f" source document in top 6: {result['source_document_in_top6']:.0%};"
                  f" process peak memory {result['process_peak_rss_mb']:.0f} MB", flush=True)
    if args.out:
        args.out.write_text(dump_json({"kb_search": results}))
        print(f"wrote {args.out}")
    return 0


async def _web_mode(site: example_site.ExamplePages, settings: Settings, reuse: bool, queries: int) -> dict[str, Any]:
    config = WebConfig(
        url_template=site.url_template(), answer_selector=example_site.ANSWER_SELECTOR,
        paragraph_selector=example_site.PARAGRAPH_SELECTOR, link_selector=example_site.LINK_SELECTOR,
        date_selector=example_site.DATE_SELECTOR, timeout=settings.web_timeout, settle_seconds=0.3, browsers=1,
        reuse=reuse, chromium_path=settings.chromium_path, chromedriver_path=settings.chromedriver_path,
    )
    retriever = WebRetriever(config)
    latencies: list[float] = []
    try:
        if reuse:
            # Start the pooled browser before timing: reuse is about the steady state of a running worker.
            warm = Claim(claim_id="warm", index=0, text="Mount Everest is high.")
            await retriever.retrieve(RetrievalRequest(claims=(warm,), claim_date=None, sources=(), today="2026-12-01"))
        for i in range(queries):
            claim = Claim(claim_id=f"c{i}", index=0, text=f"Mount Everest is {8840 + i} metres high.")
            request = RetrievalRequest(claims=(claim,), claim_date="2019-05-01", sources=(), today="2026-12-01")
            started = time.perf_counter()
            result = await retriever.retrieve(request)
            latencies.append(time.perf_counter() - started)
            if not result.passages:
                raise KnowledgeBaseError(f"the web benchmark's local page gave no evidence: {result.reason}")
    finally:
        retriever.close()
    return {
        "reuse": reuse,
        "queries": queries,
        "browsers_started": retriever.pool.started,
        "median_s": round(statistics.median(latencies), 3),
        "p95_s": round(percentile(latencies, 0.95), 3),
    }


def run_web_bench(args: argparse.Namespace, settings: Settings) -> int:
    if args.queries < 1:
        raise KnowledgeBaseError("--queries must be at least 1")
    with example_site.ExamplePages() as site:
        reuse = asyncio.run(_web_mode(site, settings, True, args.queries))
        fresh = asyncio.run(_web_mode(site, settings, False, args.queries))
    ratio = fresh["median_s"] / reuse["median_s"]
    for r in (reuse, fresh):
        label = "reused browser" if r["reuse"] else "new browser per query"
        print(f"{label:<24} median {r['median_s']:.3f} s, p95 {r['p95_s']:.3f} s"
              f" ({r['queries']} queries, {r['browsers_started']} browser starts)")
    print(f"new browser per query / reused browser (median): {ratio:.1f}x")
    if args.out:
        args.out.write_text(dump_json({"reuse": reuse, "new_browser": fresh, "median_ratio": ratio}))
        print(f"wrote {args.out}")
    return 0
