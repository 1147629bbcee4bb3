"""Deterministic ids: the same inputs always give the same id.

Replays and redeliveries therefore produce the same ids, so a consumer can
drop duplicates by id alone. Each record kind has one function here, used by
the stage that makes the record and by every consumer that looks it up
(replay, benchmarks, tests), so the two can never disagree.
"""

from enum import StrEnum
from hashlib import blake2b


class RecordKind(StrEnum):
    """The kinds of record halluwatch makes; each id starts with its kind."""

    CLAIM = "claim"
    CLAIMSET = "claimset"
    EVIDENCE = "evidence"
    PASSAGE = "passage"
    VERDICT = "verdict"
    CORRECTION = "correction"
    ALERT = "alert"
    KB_UPDATE = "kb-update"
    DEAD_LETTER = "dead"


def derive_id(kind: str, *parts: object) -> str:
    """A short stable id for ``kind`` (e.g. "claim") derived from its inputs."""
    digest = blake2b(digest_size=12)
    digest.update(str(kind).encode())
    for part in parts:
        # A separator that cannot occur in str(): ("a", "bc") != ("ab", "c").
        digest.update(b"\x00")
        digest.update(str(part).encode())
    return f"{kind}-{digest.hexdigest()}"


def claim_id(conversation_id: str, turn_id: str, index: int, variant: str = "") -> str:
    """``variant`` keeps claims of another segmentation of the same turn apart (the eval's unsegmented "-whole")."""
    return derive_id(f"{RecordKind.CLAIM}{variant}", conversation_id, turn_id, index)


def claimset_id(conversation_id: str, turn_id: str, variant: str = "") -> str:
    return derive_id(f"{RecordKind.CLAIMSET}{variant}", conversation_id, turn_id)


def evidence_id(conversation_id: str, turn_id: str) -> str:
    return derive_id(RecordKind.EVIDENCE, conversation_id, turn_id)


def verdict_id(conversation_id: str, turn_id: str) -> str:
    return derive_id(RecordKind.VERDICT, conversation_id, turn_id)


def correction_id(conversation_id: str, turn_id: str) -> str:
    return derive_id(RecordKind.CORRECTION, conversation_id, turn_id)


def alert_id(conversation_id: str, turn_id: str) -> str:
    return derive_id(RecordKind.ALERT, conversation_id, turn_id)


def passage_id(url: str, text: str) -> str:
    """The same URL and text give the same id from any retriever, so merged results de-duplicate."""
    return derive_id(RecordKind.PASSAGE, url, text)


def kb_update_id(old_passage_id: str, new_passage_id: str) -> str:
    return derive_id(RecordKind.KB_UPDATE, old_passage_id, new_passage_id)


def dead_letter_id(topic: str, partition: int, offset: int) -> str:
    return derive_id(RecordKind.DEAD_LETTER, topic, partition, offset)
