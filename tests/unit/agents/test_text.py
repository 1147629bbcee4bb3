import pytest

from agents.text import curly_quotes, sentences, straight_quotes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # An initial is part of a name, not the end of a sentence.
        ("The architect was I. M. Pei. He was born in China.", ["The architect was I. M. Pei.", "He was born in China."]),
        ("Anil V. Kumar directed it.", ["Anil V. Kumar directed it."]),
        # A title always has a name after it.
        ("Sen. Ron Wyden said so. Dr. Smith agreed.", ["Sen. Ron Wyden said so.", "Dr. Smith agreed."]),
        # A month or "No." goes on when a number follows, and may end the sentence otherwise.
        ("It was Sept. 11, 2001. The song hit No. 1 that week.", ["It was Sept. 11, 2001.", "The song hit No. 1 that week."]),
        ("He was born in Sept. He died in May.", ["He was born in Sept.", "He died in May."]),
        ("Yes. No. Maybe!", ["Yes.", "No.", "Maybe!"]),
        # A dotted acronym may end a sentence, and usually does before a capital: still a break.
        ("He lives in the U.S. The house is big.", ["He lives in the U.S.", "The house is big."]),
        ('It opened in 1900. "Great," he said.', ["It opened in 1900.", '"Great," he said.']),
    ],
)
def test_sentences_break_at_a_full_stop_but_not_after_an_initial_or_a_title(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_a_long_page_with_abbreviations_splits_into_its_sentences() -> None:
    page = "Dr. Who met I. M. Pei in Sept. 1990. " * 5000
    assert len(sentences(page)) == 5000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Kim starred in "The Map Against the World".', "Kim starred in \u201cThe Map Against the World\u201d."),
        ('"Touch" is a single from "Glory Days".', "\u201cTouch\u201d is a single from \u201cGlory Days\u201d."),
        ('H. Bruce "Lucky" Humberstone', "H. Bruce \u201cLucky\u201d Humberstone"),
        ("It's Lit's song, not 'theirs'.", "It's Lit's song, not 'theirs'."),  # single quotes are safe in JSON
    ],
)
def test_straight_double_quotes_become_typographic(text: str, expected: str) -> None:
    assert curly_quotes(text) == expected
    assert '"' not in curly_quotes(text)
    assert straight_quotes(curly_quotes(text)) == text
