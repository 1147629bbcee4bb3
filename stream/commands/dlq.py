"""``halluwatch dlq list|show|replay``: look at dead letters and send chosen ones back after a fix.

    halluwatch dlq list   [--reason R] [--since 2h|2026-12-04T09:00] [--json]
    halluwatch dlq show   ID [ID ...]
    halluwatch dlq replay [ID ...] [--reason R] [--since T] [--dry-run]
"""

from __future__ import annotations

import argparse
import datetime as dt

import orjson

from schemas import DeadLetter
from stream.app import bootstrap_servers
from stream.dead_letters import LetterFilter, chosen, original_bytes, parse_since, read_dead_letters, send_back
from stream.errors import StreamError
from stream.settings import Settings


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--broker", dest="broker_url", help="kafka://host:9092 (default: HALLUWATCH_BROKER)")
    common.add_argument("--reason", help="only letters whose reason or error type contains this (any case)")
    common.add_argument("--since", help="only letters that failed since then: 30m, 2h, 1d, or an ISO date/time (UTC)")
    dlq = sub.add_parser("dlq", help="dead letters: list, show, replay to their source topic")
    dlq_sub = dlq.add_subparsers(dest="dlq_command", required=True)
    listing = dlq_sub.add_parser("list", parents=[common], help="one line per dead letter")
    listing.add_argument("--json", action="store_true", help="the letters as JSON lines")
    show = dlq_sub.add_parser("show", parents=[common], help="everything about chosen letters, original bytes included")
    show.add_argument("ids", nargs="+", help="dead-letter ids (a unique prefix is enough)")
    replay = dlq_sub.add_parser("replay", parents=[common], help="republish chosen letters to their source topic")
    replay.add_argument("ids", nargs="*", help="dead-letter ids (default: every letter the filters choose)")
    replay.add_argument("--dry-run", action="store_true", help="say what would be sent, send nothing")


def when(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def list_line(letter: DeadLetter) -> str:
    return (f"{letter.dead_letter_id}  {when(letter.failed_at)}  {letter.source_topic}[{letter.partition}]@{letter.offset}"
            f"  {letter.stage}  {letter.error_type}: {letter.reason[:160]}")


def show_text(letter: DeadLetter) -> str:
    raw = original_bytes(letter)
    try:
        body = raw.decode("utf-8")
    except UnicodeDecodeError:
        body = f"(not UTF-8; base64) {letter.original_base64}"
    return "\n".join([
        f"dead letter   {letter.dead_letter_id}",
        f"failed at     {when(letter.failed_at)} in stage {letter.stage}",
        f"source        {letter.source_topic} partition {letter.partition} offset {letter.offset}",
        f"key           {letter.key!r}",
        f"error         {letter.error_type}: {letter.reason}",
        f"original      {len(raw)} bytes",
        body,
    ])


async def run_dlq(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.broker_url:
        raise StreamError("dlq needs the broker the worker uses: pass --broker kafka://host:9092 or set HALLUWATCH_BROKER")
    choice = LetterFilter(
        reason=args.reason,
        since=parse_since(args.since) if args.since else None,
        ids=tuple(getattr(args, "ids", ()) or ()),
    )
    bootstrap = bootstrap_servers(settings.broker_url)
    found = await read_dead_letters(bootstrap, settings)
    letters = chosen(found.letters, choice)
    if found.unreadable:
        print(f"note: {found.unreadable} message(s) on {settings.topic_prefix}dlq are not dead letters and were skipped")
    if args.dlq_command == "list":
        for letter in letters:
            print(orjson.dumps(letter).decode() if args.json else list_line(letter))
        if not args.json:
            print(f"{len(letters)} of {len(found.letters)} dead letters")
        return 0
    missing = [i for i in choice.ids if not any(letter.dead_letter_id.startswith(i) for letter in letters)]
    if missing:
        raise StreamError(f"no dead letter with id {', '.join(missing)}: see `halluwatch dlq list` for the ids")
    if args.dlq_command == "show":
        print("\n\n".join(show_text(letter) for letter in letters))
        return 0
    if args.dry_run:
        for letter in letters:
            print(f"would send {letter.dead_letter_id} back to {letter.source_topic}")
        print(f"{len(letters)} letters would be sent (dry run)")
        return 0
    sent = await send_back(letters, bootstrap)
    print(f"sent {sent} letters back to their source topics")
    return 0
