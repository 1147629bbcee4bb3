"""What several commands share: checking text a user passed, and printing JSON."""

from __future__ import annotations

import unicodedata

import orjson

from agents.errors import InputError


def dump_json(obj: object) -> str:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


def readable_text(text: str, what: str = "the text") -> str:
    """The text, stripped; an InputError when it is empty or not readable text (binary junk)."""
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{what} is empty: pass the assistant's utterance, e.g. halluwatch check \"Paris is in France.\"")
    # Undecodable bytes arrive as lone surrogates; control characters mean binary data.
    bad = sum(
        1 for ch in stripped
        if 0xD800 <= ord(ch) <= 0xDFFF or (unicodedata.category(ch) == "Cc" and ch not in "\t\n\r")
    )
    if bad or unicodedata.category(stripped[0]) == "Co":
        raise InputError(f"{what} is not readable text ({bad} binary or control characters): pass plain UTF-8 text")
    return stripped
