"""``halluwatch kb ...`` (the local knowledge base) and ``halluwatch web bench`` (the browser retriever).

    halluwatch kb add FILE.jsonl|FILE.csv
    halluwatch kb search "QUERY" [--as-of DATE] [--claim-date DATE] [--limit N] [--json]
    halluwatch kb stats [--json]
    halluwatch kb history URL|ID
    halluwatch kb bench [--docs 10000,100000] [--queries N] [--out FILE]
    halluwatch web bench [--queries N] [--out FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
from pathlib import Path

from agents.errors import KnowledgeBaseError
from agents.evidence.kb.documents import KbDocument
from agents.evidence.kb.importer import read_import_file
from agents.evidence.kb.store import KnowledgeBase
from agents.evidence.passages import today
from stream.commands.common import dump_json
from stream.settings import Settings


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--kb", type=Path, dest="kb_path",
                       help="knowledge-base file (default: HALLUWATCH_KB, else kb.sqlite3 in HALLUWATCH_DATA_DIR)")
    kb = sub.add_parser("kb", help="the local knowledge base: add, search, stats, history, bench")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    add = kb_sub.add_parser("add", parents=[where], help="import documents (one transaction; bad rows skipped)")
    add.add_argument("file", type=Path, help="JSONL or CSV: text, url, title, publisher, published_at, ingested_at, primary")
    search = kb_sub.add_parser("search", parents=[where], help="search the knowledge base")
    search.add_argument("query")
    search.add_argument("--as-of", help="what the knowledge base knew at the end of this day (YYYY-MM-DD)")
    search.add_argument("--claim-date", help="rank documents near this date up (YYYY-MM-DD)")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--json", action="store_true")
    stats = kb_sub.add_parser("stats", parents=[where], help="document counts and date range")
    stats.add_argument("--json", action="store_true")
    history = kb_sub.add_parser("history", parents=[where], help="the supersede chain of a document")
    history.add_argument("ref", help="a document URL, id or passage id")
    bench = kb_sub.add_parser("bench", help="search latency on generated knowledge bases")
    bench.add_argument("--docs", default="10000,100000", help="comma-separated sizes (default 10000,100000)")
    bench.add_argument("--queries", type=int, default=300, help="searches per size")
    bench.add_argument("--out", type=Path, help="write the results as JSON")

    web = sub.add_parser("web", help="the Selenium web retriever")
    web_sub = web.add_subparsers(dest="web_command", required=True)
    web_bench = web_sub.add_parser("bench", help="query latency against a local answer page, browser reuse vs not")
    web_bench.add_argument("--queries", type=int, default=12, help="queries per mode")
    web_bench.add_argument("--out", type=Path, help="write the results as JSON")


def iso_date(value: str | None, flag: str) -> str | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise KnowledgeBaseError(f"{flag} {value!r} is not a date: use YYYY-MM-DD, e.g. {flag} 2021-06-30") from None


def open_kb(settings: Settings, must_exist: bool = True) -> KnowledgeBase:
    path = settings.kb_file
    if must_exist and not path.exists():
        raise KnowledgeBaseError(f"no knowledge base at {path}: import documents first with `halluwatch kb add FILE`"
                                 " (or point --kb / HALLUWATCH_KB at an existing one)")
    return KnowledgeBase(path)


def run_kb(args: argparse.Namespace, settings: Settings) -> int:
    if args.kb_command == "bench":
        from stream.commands.retrieval_bench import run_kb_bench

        return run_kb_bench(args)
    if args.kb_command == "add" and not args.file.is_file():
        raise KnowledgeBaseError(f"cannot read {args.file}: no such file; pass a .jsonl or .csv file to import")
    kb = open_kb(settings, must_exist=args.kb_command != "add")
    try:
        return {"add": _add, "search": _search, "stats": _stats, "history": _history}[args.kb_command](kb, args)
    finally:
        kb.close()


def _add(kb: KnowledgeBase, args: argparse.Namespace) -> int:
    report = kb.add(read_import_file(args.file), ingested_at=today())
    print(f"imported {args.file} into {kb.path}: {report.added} added, {report.duplicates} already there,"
          f" {len(report.bad)} bad rows skipped")
    for bad in report.bad:
        print(f"  {args.file}:{bad.line}: {bad.reason}")
    return 0


def _search(kb: KnowledgeBase, args: argparse.Namespace) -> int:
    as_of = iso_date(args.as_of, "--as-of")
    claim_date = iso_date(args.claim_date, "--claim-date")
    if args.limit < 1:
        raise KnowledgeBaseError("--limit must be at least 1")
    hits = kb.search(args.query, limit=args.limit, as_of=as_of, claim_date=claim_date)
    if args.json:
        print(dump_json([{**dataclasses.asdict(h.document), "score": h.score, "relevance": h.relevance,
                          "proximity": h.proximity, "primary": h.primary} for h in hits]))
        return 0
    if not hits:
        print("no document matches" + (f" as of {as_of}" if as_of else ""))
    for hit in hits:
        d = hit.document
        flag = " primary" if hit.primary else ""
        print(f"#{d.doc_id} {hit.score:.3f} {d.published_at or 'undated'}{flag}  {d.title or '(untitled)'}  {d.url}")
        print(f"    {' '.join(d.text.split())[:160]}")
    return 0


def _stats(kb: KnowledgeBase, args: argparse.Namespace) -> int:
    stats = kb.stats()
    if args.json:
        print(dump_json({**dataclasses.asdict(stats), "path": str(stats.path)}))
        return 0
    print(f"knowledge base {stats.path} ({stats.size_bytes / 1e6:.1f} MB)")
    print(f"  documents: {stats.documents} ({stats.current} current, {stats.superseded} superseded,"
          f" {stats.primary} primary sources, {stats.undated} undated)")
    print(f"  published: {stats.oldest or '-'} to {stats.newest or '-'}; last ingested {stats.last_ingested or '-'}")
    return 0


def describe(d: KbDocument) -> str:
    return (f"#{d.doc_id} published {d.published_at or 'unknown'}, ingested {d.ingested_at}:"
            f" {d.title or '(untitled)'} {d.url}")


def _history(kb: KnowledgeBase, args: argparse.Namespace) -> int:
    chains = kb.history(args.ref)
    if not chains:
        raise KnowledgeBaseError(f"no document with URL or id {args.ref!r} in {kb.path}: see `halluwatch kb search`")
    for n, chain in enumerate(chains):
        if n:
            print()
        for d in chain:
            print(describe(d))
            if d.superseded_by is not None:
                print(f"  superseded on {d.superseded_at} by #{d.superseded_by}: {d.supersede_reason}")
        print("  (current)" if chain[-1].superseded_by is None else "")
    return 0
