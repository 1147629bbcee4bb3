"""Generate the JSON Schema files in ``schemas/json`` from the record classes.

Run ``python -m schemas.generate`` after changing a record; a unit test fails
while the committed files differ from what this module produces.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

import orjson

from schemas import records

SCHEMA_DIR = Path(__file__).parent / "json"

# The records that travel on a topic (or come out of a stage) get a file each.
WIRE_RECORDS: tuple[type, ...] = (
    records.Turn,
    records.ClaimSet,
    records.Evidence,
    records.ClaimVerdict,
    records.TurnVerdict,
    records.Correction,
    records.Alert,
    records.Claim,
    records.Passage,
    records.DeadLetter,
    records.KbUpdate,
)


def schema_file_name(cls: type) -> str:
    snake = "".join("_" + c.lower() if c.isupper() else c for c in cls.__name__).lstrip("_")
    return f"{snake}.schema.json"


def _type_schema(tp: Any, meta: typing.Mapping[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = _type_schema(options[0], meta, defs)
        return {"anyOf": [inner, {"type": "null"}]}
    if origin is tuple:
        item_type = typing.get_args(tp)[0]
        item_meta = {"max_length": meta["item_max_length"]} if "item_max_length" in meta else {}
        out: dict[str, Any] = {"type": "array", "items": _type_schema(item_type, item_meta, defs)}
        if "max_items" in meta:
            out["maxItems"] = meta["max_items"]
        return out
    if isinstance(tp, type) and issubclass(tp, Enum):
        return {"enum": [m.value for m in tp]}
    if dataclasses.is_dataclass(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # placeholder against recursion
            defs[tp.__name__] = _object_schema(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if tp is str:
        out = {"type": "string"}
        for key, name in (("min_length", "minLength"), ("max_length", "maxLength"), ("pattern", "pattern")):
            if key in meta:
                out[name] = meta[key]
        return out
    if tp is bool:
        return {"type": "boolean"}
    if tp in (int, float):
        out = {"type": "integer" if tp is int else "number"}
        for key in ("minimum", "maximum"):
            if key in meta:
                out[key] = meta[key]
        return out
    raise TypeError(f"no JSON Schema mapping for {tp!r}")


def _object_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        properties[f.name] = _type_schema(hints[f.name], f.metadata, defs)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    schema["additionalProperties"] = False
    if cls.__doc__:
        schema["description"] = " ".join(cls.__doc__.split())
    return schema


@functools.cache
def schema_with_items(cls: type, field_name: str, count: int) -> dict[str, Any]:
    """``schema_for(cls)`` with the list ``field_name`` holding exactly ``count`` items (one answer per claim).

    Built once per (class, field, count) and shared, because a stage asks for it on every model call and
    building it reads every type hint again; callers only read it."""
    schema = schema_for(cls)
    schema["properties"][field_name]["minItems"] = schema["properties"][field_name]["maxItems"] = count
    return schema


def schema_for(cls: type) -> dict[str, Any]:
    """The standalone JSON Schema of one record class, nested records in ``$defs``."""
    defs: dict[str, Any] = {}
    body = _object_schema(cls, defs)
    out: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://halluwatch.dev/schemas/{schema_file_name(cls)}",
        "title": cls.__name__,
        **body,
    }
    if defs:
        out["$defs"] = dict(sorted(defs.items()))
    return out


def render(cls: type) -> bytes:
    return orjson.dumps(schema_for(cls), option=orjson.OPT_INDENT_2) + b"\n"


def main() -> None:
    SCHEMA_DIR.mkdir(exist_ok=True)
    for cls in WIRE_RECORDS:
        (SCHEMA_DIR / schema_file_name(cls)).write_bytes(render(cls))
        print(f"wrote {SCHEMA_DIR / schema_file_name(cls)}")


if __name__ == "__main__":
    main()
