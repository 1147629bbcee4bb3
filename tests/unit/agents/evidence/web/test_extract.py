"""The web retriever's pure rules: the directive query, dates in cards, primary links, page -> passages."""

from __future__ import annotations

import pytest

from agents.evidence.web.extract import (
    AnswerParagraph,
    PageData,
    SourceCard,
    directive_query,
    is_official,
    parse_date_text,
    passages_from_page,
    problem_with,
    search_url,
)
from schemas import Claim, PrimarySource

TODAY = "2026-12-03"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2020-12-08", "2020-12-08"),
        ("Published 8 December 2020 by the ministry", "2020-12-08"),
        ("Dec 8, 2020", "2020-12-08"),
        ("September 30th, 2021 · 4 min read", "2021-09-30"),
        ("3 days ago", "2026-11-30"),
        ("2 weeks ago", "2026-11-19"),
        ("5 hours ago", "2026-12-03"),
        ("In March 2023", None),  # a month is not a date
        ("31 February 2020", None),
        ("", None),
    ],
)
def test_parse_date_text(text: str, expected: str | None) -> None:
    assert parse_date_text(text, TODAY) == expected


def test_directive_query_names_claims_date_and_primary_sources() -> None:
    claims = (Claim(claim_id="a", index=0, text="Everest is 8,848 m."), Claim(claim_id="b", index=1, text="It is in Nepal."))
    sources = (PrimarySource(kind="survey office", where="Survey Department of Nepal", reason="official"),)
    query = directive_query(claims, "2019-05-01", sources)
    assert query == ("Give dated facts, oldest to newest and up to today, with their sources, about these claims made on"
                     " 2019-05-01: 1. Everest is 8,848 m. 2. It is in Nepal. Check these primary sources first:"
                     " Survey Department of Nepal (survey office).")
    assert "date of the claims unknown" in directive_query(claims, None, ())
    long = directive_query(tuple(Claim(claim_id=str(i), index=i, text="x" * 500) for i in range(10)), None, sources)
    assert len(long) <= 1500 and long.endswith("(survey office).")
    assert search_url("https://s.example/?q={query}", "a b&c") == "https://s.example/?q=a+b%26c"


def test_official_hosts() -> None:
    assert is_official("https://www.dos.gov.np/x") and is_official("https://www.nasa.gov/")
    assert is_official("https://www.insee.gouv.fr/") and is_official("https://www.who.int/")
    assert not is_official("https://www.government-news.com/") and not is_official("https://gov.example.com/")


PAGE = PageData(
    url="https://search.example/?q=x", title="AI answer", found=True,
    paragraphs=(
        AnswerParagraph("Everest was measured at 8,848.86 m in 2020. [1]", ("https://www.dos.gov.np/everest",)),
        AnswerParagraph("Climbers keep arriving.", ()),
        AnswerParagraph("   ", ()),
    ),
    sources=(
        SourceCard("https://www.dos.gov.np/everest", "Height of Everest", "Official height announced.", "Dec 8, 2020"),
        SourceCard("https://www.dos.gov.np/everest", "Height of Everest", "again", "Dec 8, 2020"),  # cited twice
        SourceCard("https://blog.example/everest", "Blog", "", "yesterday"),
        SourceCard("javascript:void(0)", "menu", "", ""),
    ),
    body_text="",
)


def test_passages_from_page() -> None:
    passages = passages_from_page(PAGE, TODAY, "web", primary_hints=["Everest blog"])
    got = [(p.text, p.url, p.published_at, p.primary) for p in passages]
    assert got == [
        ("Everest was measured at 8,848.86 m in 2020. [1]", "https://www.dos.gov.np/everest", "2020-12-08", True),
        ("Climbers keep arriving.", "https://search.example/?q=x", None, False),
        ("Official height announced.", "https://www.dos.gov.np/everest", "2020-12-08", True),
        ("Blog", "https://blog.example/everest", None, True),  # named by the sources stage
    ]
    assert [p.score for p in passages] == [1.0, 0.95, 1.0, 0.95]


def test_problem_with_page() -> None:
    assert problem_with(PAGE, "#a", ("captcha",)) == ""
    missing = PageData("https://s.example/", "", False, (), (), "Our systems detected unusual traffic")
    assert problem_with(missing, "#a", ("unusual traffic",)).startswith("the page refused the query")
    assert problem_with(missing, "#a", ()) == "no element matches the answer selector '#a' on https://s.example/"
    empty = PageData("https://s.example/", "", True, (AnswerParagraph(" ", ()),), (), "")
    assert problem_with(empty, "#a", ()) == "the answer element on https://s.example/ is empty"


async def test_missing_browser_is_a_reason_not_an_exception(tmp_path) -> None:
    from agents.evidence.retriever import RetrievalRequest
    from agents.evidence.web.retriever import WebConfig, WebRetriever

    retriever = WebRetriever(WebConfig(chromium_path=tmp_path / "no-chromium", timeout=2.0))
    claim = Claim(claim_id="a", index=0, text="Everest is 8,848 m.")
    result = await retriever.retrieve(RetrievalRequest(claims=(claim,), claim_date=None, sources=(), today=TODAY))
    retriever.close()
    assert result.passages == () and result.failed
    assert result.reason.startswith(f"chromium not found at {tmp_path / 'no-chromium'}: install the Debian packages")
