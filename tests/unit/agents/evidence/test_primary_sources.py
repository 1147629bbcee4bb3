"""Official and primary sources are told by their host, read the way urllib reads it."""

from urllib.parse import urlsplit

import pytest

from agents.evidence.primary_sources import _host, is_official, looks_primary


@pytest.mark.parametrize("url", [
    "https://www.nasa.gov/x", "http://user:pw@Stats.GOV.uk:8080/a?b#c", "https://example.org", "ftp://a.b/c",
    "not a url", "javascript:alert(1)", "https://europa.eu?x", "//cdn.x.org/a", "", "mailto:a@b.org",
])
def test_the_host_is_the_one_urllib_finds(url: str) -> None:
    assert _host(url) == (urlsplit(url).hostname or "")


def test_official_and_primary_hosts() -> None:
    assert is_official("https://www.census.gov/data") and is_official("https://ec.europa.eu/eurostat")
    assert not is_official("https://gov.example.com/") and not is_official("javascript:alert('x.gov')")
    assert looks_primary("https://www.nasa.gov/news", "NASA", {"nasa"})
    assert not looks_primary("https://news.example.com/nasa-story", "Daily News", {"nasa"})
