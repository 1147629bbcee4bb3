"""Readers for halluwatch's own JSONL inputs: one object a line, and dialogue context files.

A bad line raises :class:`InputError` naming the file and line, so the CLI can
say exactly what to fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from agents.errors import InputError
from schemas import ContextLine, Role


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-empty line; a clear error for unreadable input."""
    try:
        handle = Path(path).open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}; check the path and permissions") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise InputError(f"{path}:{number}: not a JSON object; the file must be JSONL (one object a line)") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
            yield number, obj


def read_context(path: Path) -> list[ContextLine]:
    """Dialogue context JSONL: one earlier turn a line with role and text."""
    lines = []
    for n, row in read_jsonl(path):
        try:
            lines.append(ContextLine(role=Role(row["role"]), text=str(row["text"])))
        except (KeyError, ValueError):
            raise InputError(f"{path}:{n}: each context line needs role (user|assistant) and text") from None
    return lines
