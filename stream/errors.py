"""Errors of the streaming layer (all under :class:`schemas.HalluwatchError`)."""

from schemas.errors import HalluwatchError, RecordError


class StreamError(HalluwatchError):
    """Something about the broker or topics that the user can fix."""


class BrokerError(StreamError):
    """The broker cannot be started or reached; the message says what to do."""


class ReplayError(StreamError):
    """A replay file or replay wait that cannot be completed; the message says what to fix."""


class KeyMismatchError(RecordError):
    """A turn whose message key is not its conversation id: its conversation would be split over partitions."""
