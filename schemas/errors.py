"""The root of halluwatch's exception hierarchy and the errors of the wire format.

Every error halluwatch raises on purpose derives from :class:`HalluwatchError`
and carries a message that says what to do about it. The CLI turns these into
one-line messages with exit code 2; anything else is a bug.
"""


class HalluwatchError(Exception):
    """Base class of every error halluwatch raises on purpose."""


class RecordError(HalluwatchError):
    """Bytes that are not a valid record of the expected type."""


class NotJSONError(RecordError):
    """The bytes are not JSON."""


class SchemaViolation(RecordError):
    """The JSON does not match the record's schema."""
