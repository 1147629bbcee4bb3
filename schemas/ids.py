"""Deterministic ids: the same inputs always give the same id.

Replays and redeliveries therefore produce the same ids, so a consumer can
drop duplicates by id alone.
"""

from hashlib import blake2b


def derive_id(kind: str, *parts: object) -> str:
    """A short stable id for ``kind`` (e.g. "claim") derived from its inputs."""
    digest = blake2b(digest_size=12)
    digest.update(kind.encode())
    for part in parts:
        # A separator that cannot occur in str(): ("a", "bc") != ("ab", "c").
        digest.update(b"\x00")
        digest.update(str(part).encode())
    return f"{kind}-{digest.hexdigest()}"
