"""The one codec: records to JSON bytes with orjson, and back with validation.

``decode`` checks the bytes against the record's JSON Schema file before it
builds the dataclass, so anything that reaches a stage is well-formed. Errors
are :class:`~schemas.errors.RecordError` subclasses whose message names the
offending field.

Every record on every topic is checked, so the check is compiled to Python
once per record type (fastjsonschema), which makes it several times cheaper
than walking the schema for each record; jsonschema, the reference
implementation, is asked only when the compiled check rejects a value, both
to name the offending field and to have the last word.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

import fastjsonschema
import orjson
from jsonschema import Draft202012Validator

from schemas.errors import NotJSONError, SchemaViolation
from schemas.generate import SCHEMA_DIR, WIRE_RECORDS, schema_file_name, schema_for

R = TypeVar("R")


def encode(record: object) -> bytes:
    """JSON bytes of a record (orjson serializes dataclasses and enums natively)."""
    return orjson.dumps(record)


def to_dict(record: object) -> dict[str, Any]:
    return orjson.loads(encode(record))


def decode(cls: type[R], data: bytes | str | None) -> R:
    """Parse, validate against ``cls``'s schema, and build the record."""
    if not data:
        raise NotJSONError("empty value (a tombstone?): a record is a JSON object; send the record, not a deletion")
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise NotJSONError(f"not valid JSON: {exc}") from None
    return from_dict(cls, obj)


def from_dict(cls: type[R], obj: object) -> R:
    """Validate a parsed JSON value against ``cls``'s schema and build the record."""
    if not _passes_compiled(cls, obj):
        # Where the two disagree (they should not), the reference implementation decides.
        error = next(iter(sorted(_validator(cls).iter_errors(obj), key=lambda e: e.path)), None)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
            raise SchemaViolation(f"{cls.__name__} invalid at {where}: {error.message[:300]}")
    return _builder(cls)(obj)


@functools.cache
def _schema(cls: type) -> dict[str, Any]:
    if cls in WIRE_RECORDS:
        # The committed file is the contract, not whatever the code says today.
        return orjson.loads((SCHEMA_DIR / schema_file_name(cls)).read_bytes())
    return schema_for(cls)


@functools.cache
def _validator(cls: type) -> Draft202012Validator:
    return Draft202012Validator(_schema(cls))


@functools.cache
def _compiled(cls: type) -> Any:
    # fastjsonschema knows drafts up to 7; the schemas use no keyword whose meaning changed since
    # (tests/unit/schemas/test_codec_compiled.py checks the two against each other on broken records).
    # No handlers: a remote $ref is never fetched.
    return fastjsonschema.compile({**_schema(cls), "$schema": "http://json-schema.org/draft-07/schema#"}, handlers={})


def _passes_compiled(cls: type, obj: object) -> bool:
    try:
        _compiled(cls)(obj)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@functools.cache
def _builder(tp: Any) -> Callable[[Any], Any]:
    """A function that turns validated JSON into a ``tp`` (the schema already guaranteed the shapes), made
    once per type: every record on every topic goes through one, so the type is inspected here and not
    again for each value."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _builder(next(a for a in typing.get_args(tp) if a is not type(None)))
    if origin is tuple:
        item = typing.get_args(tp)[0]
        return _or_none(lambda value: tuple(map(_builder(item), value)))
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _or_none(tp)
    if dataclasses.is_dataclass(tp):
        names = [f.name for f in dataclasses.fields(tp)]

        def build(value: Any) -> Any:
            # Field builders are looked up per call (each a cache hit), so a record type may nest itself.
            hints = _hints(tp)
            return tp(**{name: _builder(hints[name])(value[name]) for name in names if name in value})

        return _or_none(build)
    if tp is float:
        return _or_none(float)
    return _identity


def _or_none(build: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else build(value)


def _identity(value: Any) -> Any:
    return value
