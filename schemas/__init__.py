"""Typed records, their JSON Schemas and the orjson codec."""

from schemas.codec import decode, encode, from_dict, to_dict
from schemas.errors import HalluwatchError, NotJSONError, RecordError, SchemaViolation
from schemas.ids import RecordKind, derive_id
from schemas.records import (
    Alert,
    Citation,
    Claim,
    ClaimSet,
    ClaimSufficiency,
    ClaimVerdict,
    ContextLine,
    Correction,
    DeadLetter,
    DialogueLabel,
    ErrorFix,
    Evidence,
    EvidenceFit,
    FinGrActScore,
    GroundingDocument,
    JustificationRound,
    KbDocumentRef,
    KbUpdate,
    Label,
    LabelScores,
    Passage,
    Preference,
    PreferenceReason,
    PrimarySource,
    Role,
    Severity,
    SkippedSpan,
    SkipReason,
    StageTiming,
    Sufficiency,
    Turn,
    TurnVerdict,
)

__all__ = [
    "Alert", "Citation", "Claim", "ClaimSet", "ClaimSufficiency", "ClaimVerdict", "ContextLine", "Correction", "DialogueLabel",
    "DeadLetter", "ErrorFix", "Evidence", "EvidenceFit", "FinGrActScore", "GroundingDocument", "HalluwatchError", "JustificationRound",
    "KbDocumentRef", "KbUpdate", "Label", "LabelScores", "NotJSONError", "Passage", "Preference", "PreferenceReason",
    "PrimarySource", "RecordError", "RecordKind", "Role", "SchemaViolation", "Severity", "SkipReason", "SkippedSpan", "StageTiming",
    "Sufficiency", "Turn",
    "TurnVerdict", "decode", "derive_id", "encode", "from_dict", "to_dict",
]
