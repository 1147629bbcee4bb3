"""How many tokens an answer may take: enough for the longest JSON the output's schema allows.

The grammar bounds every string (``maxLength``) and list (``maxItems``) of an answer, so an answer always
closes within a known length, however the model rambles; only a token budget shorter than that length can
cut it. It did: verify's budget assumed about two characters per token, and on an evidence passage full of
tariff codes the 270M model filled its explanation with digits (one token each), ran out of tokens inside
the string, and the row failed twice, although the verdict label it had already written was fine. Greedy
decoding repeats the same cut on the retry, so only a sufficient budget helps.

One token per character covers every text Gemma's vocabulary spells in whole characters (digits are the
worst common case). A budget costs nothing when the answer ends earlier.
"""

from __future__ import annotations

from typing import Any

import orjson

_SLACK = 16  # a few tokens for whitespace the JSON grammar allows between values
_NUMBER_CHARS = 24  # the longest number literal worth writing


def output_budget(schema: dict[str, Any]) -> int:
    """Tokens enough for the longest answer ``schema`` allows (at one token per character), plus a little slack.

    Raises ValueError for a schema that leaves a string or list unbounded: such an answer has no safe budget,
    so the caller must choose one."""
    return _longest(schema, schema.get("$defs", {})) + _SLACK


def _longest(node: dict[str, Any], defs: dict[str, Any]) -> int:
    if "$ref" in node:
        return _longest(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in node:
        return max(len(orjson.dumps(value)) for value in node["enum"])
    if "anyOf" in node:
        return max(_longest(option, defs) for option in node["anyOf"])
    kind = node.get("type")
    if kind == "object":
        properties = node.get("properties", {})
        # {"name":value,...}: quotes and colon per property, commas between, braces around.
        fields = sum(len(name) + 3 + _longest(value, defs) for name, value in properties.items())
        return fields + max(len(properties) - 1, 0) + 2
    if kind == "array":
        if "maxItems" not in node:
            raise ValueError("an array without maxItems has no longest answer; pass max_tokens yourself")
        items = node["maxItems"]
        return items * _longest(node["items"], defs) + max(items - 1, 0) + 2
    if kind == "string":
        if "maxLength" not in node:
            raise ValueError("a string without maxLength has no longest answer; pass max_tokens yourself")
        return node["maxLength"] + 2
    if kind in ("integer", "number"):
        return _NUMBER_CHARS
    if kind == "boolean":
        return len("false")
    if kind == "null":
        return len("null")
    raise ValueError(f"no longest answer for the schema node {node!r}")
