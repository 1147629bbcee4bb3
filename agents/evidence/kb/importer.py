"""Reading knowledge-base import files: JSONL (one document an object a line) or CSV with a header.

A line that cannot be read (bad JSON, a CSV row with the wrong number of
fields) comes back as its reason, so the import can report it by line
number and carry on; a file that cannot be read at all (missing, not UTF-8,
a CSV header without ``text``) raises :class:`KnowledgeBaseError`. The
readers are generators consumed inside the import's transaction, so an error
half-way leaves the knowledge base as it was.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import orjson

from agents.errors import KnowledgeBaseError
from agents.evidence.kb.documents import Row

COLUMNS = ("text", "url", "title", "publisher", "published_at", "ingested_at", "primary")
FORMAT_HINT = "columns: text (required), url, title, publisher, published_at, ingested_at (YYYY-MM-DD), primary"


def _open(path: Path) -> IO[str]:
    try:
        return Path(path).open(encoding="utf-8", newline="")
    except OSError as exc:
        raise KnowledgeBaseError(f"cannot read {path}: {exc.strerror}; check the path and permissions") from None


def _lines(path: Path, handle: IO[str]) -> Iterator[tuple[int, str]]:
    try:
        yield from enumerate(handle, start=1)
    except UnicodeDecodeError as exc:
        raise KnowledgeBaseError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); nothing was imported") from None


def read_jsonl_rows(path: Path) -> Iterator[Row]:
    with _open(path) as handle:
        for number, line in _lines(path, handle):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                yield number, "not a JSON object"
                continue
            if not isinstance(obj, dict):
                yield number, f"expected a JSON object, got {type(obj).__name__}"
                continue
            unknown = sorted(set(obj) - set(COLUMNS) - {"score"})
            if unknown:
                yield number, f"unknown field(s) {', '.join(unknown)} ({FORMAT_HINT})"
                continue
            yield number, obj


def read_csv_rows(path: Path) -> Iterator[Row]:
    with _open(path) as handle:
        numbered = _lines(path, handle)
        reader = csv.reader(line for _, line in numbered)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            return
        except csv.Error as exc:
            raise KnowledgeBaseError(f"{path}:1: unreadable CSV header ({exc}); {FORMAT_HINT}") from None
        unknown = [h for h in header if h not in COLUMNS]
        if "text" not in header or unknown:
            problem = f"unknown column(s) {', '.join(unknown)}" if unknown else "no 'text' column"
            raise KnowledgeBaseError(f"{path}:1: bad CSV header ({problem}); {FORMAT_HINT}")
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield reader.line_num, f"unreadable CSV row ({exc})"
                continue
            if not any(f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                yield reader.line_num, f"{len(fields)} fields but the header has {len(header)}"
                continue
            yield reader.line_num, dict(zip(header, fields))


def read_import_file(path: Path) -> Iterator[Row]:
    """Rows of a .jsonl or .csv file; the extension picks the format."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return read_csv_rows(path)
    if suffix in (".jsonl", ".ndjson"):
        return read_jsonl_rows(path)
    raise KnowledgeBaseError(f"{path}: the import file must end in .jsonl or .csv ({FORMAT_HINT})")
