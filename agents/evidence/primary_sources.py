"""Rules for telling a primary source from a secondary one by its URL and publisher.

Used by the knowledge base's ranking and by the web retriever's page
extraction, so a document counts as primary the same way wherever it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from agents.text import content_words

# Host labels too generic to say whose site it is.
_GENERIC_HOST = frozenset("www com org net gov edu int co uk fr de info".split())


# Sites of governments, international bodies and the military publish original records.
_OFFICIAL_HOST = re.compile(r"(^|\.)(gov|mil|int)(\.[a-z]{2})?$|(^|\.)gouv\.[a-z]{2}$|(^|\.)europa\.eu$")


def is_official(url: str) -> bool:
    return bool(_OFFICIAL_HOST.search(urlsplit(url).hostname or ""))


def hint_words(hints: Iterable[str]) -> set[str]:
    return {w for hint in hints for w in content_words(hint) if len(w) > 2}


def looks_primary(url: str, publisher: str, hints: set[str]) -> bool:
    """The document's site or publisher is one the sources stage named (e.g. "NASA" -> www.nasa.gov)."""
    if not hints:
        return False
    host = urlsplit(url).hostname or ""
    labels = {label for label in host.split(".") if label and label not in _GENERIC_HOST}
    publisher_words = content_words(publisher)
    return bool(labels & hints) or bool(publisher_words and publisher_words <= hints)
