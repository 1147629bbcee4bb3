"""Rules for telling a primary source from a secondary one by its URL and publisher.

Used by the knowledge base's ranking and by the web retriever's page
extraction, so a document counts as primary the same way wherever it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agents.text import content_words

# Host labels too generic to say whose site it is.
_GENERIC_HOST = frozenset("www com org net gov edu int co uk fr de info".split())


# Sites of governments, international bodies and the military publish original records.
_OFFICIAL_HOST = re.compile(r"(^|\.)(gov|mil|int)(\.[a-z]{2})?$|(^|\.)gouv\.[a-z]{2}$|(^|\.)europa\.eu$")


_HOST = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*:)?//(?:[^@/?#]*@)?([^/?#:\[\]]*)")


def is_official(url: str) -> bool:
    return bool(_OFFICIAL_HOST.search(_host(url)))


def _host(url: str) -> str:
    """The host name of a URL, lower-cased ("" when it has none): what ``urlsplit(url).hostname`` gives,
    at a fraction of its cost, which matters when every search re-ranks dozens of documents. An IPv6
    literal gives "", which names no publisher anyway."""
    match = _HOST.match(url)
    return match.group(1).lower() if match else ""


def hint_words(hints: Iterable[str]) -> set[str]:
    return {w for hint in hints for w in content_words(hint) if len(w) > 2}


def looks_primary(url: str, publisher: str, hints: set[str]) -> bool:
    """The document's site or publisher is one the sources stage named (e.g. "NASA" -> www.nasa.gov)."""
    if not hints:
        return False
    host = _host(url)
    labels = {label for label in host.split(".") if label and label not in _GENERIC_HOST}
    publisher_words = content_words(publisher)
    return bool(labels & hints) or bool(publisher_words and publisher_words <= hints)
