"""The sentence parser adapter: what a later "it" or "they" may point back to, on the real spaCy pipeline."""

import pytest

from agents import parsing
from agents.errors import ModelFileError
from agents.parsing import Mention, SentenceParser


def test_subjects_come_first_with_their_number(parser: SentenceParser) -> None:
    found = parser.mentions("The mill near the bridge sold flour to three villages.")
    assert found[0] == Mention(text="The mill near the bridge", plural=False, subject=True)
    assert Mention(text="flour", plural=False, subject=False) in found
    assert any(m.text == "three villages" and m.plural and not m.subject for m in found)


@pytest.mark.parametrize(("sentence", "subject", "plural"), [
    ("The Philippines is an archipelago.", "The Philippines", False),  # a plural-looking name of one country
    ("The Maldives was a protectorate.", "The Maldives", False),
    ("The police have closed the road.", "The police", True),  # a singular-looking noun used as plural
    ("The islands were settled late.", "The islands", True),
    ("The islands can flood.", "The islands", True),  # a modal says nothing: the noun's own form decides
])
def test_a_subject_has_the_number_its_verb_agrees_with(parser: SentenceParser, sentence: str, subject: str,
                                                       plural: bool) -> None:
    found = parser.mentions(sentence)[0]
    assert (found.text, found.subject, found.plural) == (subject, True, plural)


def test_a_gerund_clause_subject_is_a_mention(parser: SentenceParser) -> None:
    found = parser.mentions("Crossing the desert on foot was dangerous.")
    assert found[0] == Mention(text="Crossing the desert on foot", plural=False, subject=True, clause=True)


def test_descriptions_possessed_nouns_and_long_clauses_are_not_mentions(parser: SentenceParser) -> None:
    texts = [m.text for m in parser.mentions("Yad Vashem is a memorial.")]
    assert texts == ["Yad Vashem"], "'a memorial' describes the subject, it names nothing new"
    assert not any(m.text == "their horses" for m in parser.mentions("The riders fed their horses."))
    long_subject = "The small wooden boat that the fishermen of the northern village built last winter sank."
    assert all(len(m.text.split()) <= parsing.MAX_MENTION_WORDS for m in parser.mentions(long_subject))


def test_a_possessor_is_a_mention_without_its_ending_and_a_fragment_is_none(parser: SentenceParser) -> None:
    assert any(m.text == "Marie Curie" and m.person for m in parser.mentions("Marie Curie's notebooks are radioactive."))
    assert parser.mentions("No problem.") == ()


def test_it_and_they_are_mentions_that_point_further_back(parser: SentenceParser) -> None:
    assert parser.mentions("It was besieged for a year.")[0] == Mention(text="It", plural=False, subject=True,
                                                                           pronoun=True)
    assert parser.mentions("Nobody saw them again.")[-1].pronoun


@pytest.mark.parametrize(("sentence", "mentions"), [
    ("The new signs make it easier to find the exit.", ["The new signs", "the exit"]),
    ("Most readers found it hard to believe the ending.", ["Most readers", "the ending"]),
    ("It is important to water the roses.", ["the roses"]),
    ("We painted it red last spring.", ["it", "last spring"]),  # a thing that was painted: it refers
    # What a question asks for is no thing to point back to either.
    ("It's amazing how much effort goes into the show.", ["the show"]),
    ("Which type of tea do they serve at the cafe?", ["they", "tea", "the cafe"]),
])
def test_a_placeholder_it_or_what_a_question_asks_is_no_mention(parser: SentenceParser, sentence: str,
                                                                mentions: list[str]) -> None:
    assert [m.text for m in parser.mentions(sentence)] == mentions


@pytest.mark.parametrize(("sentence", "dummy"), [
    ("It is believed that the bridge collapsed in 1907.", True),
    ("It takes three days to cross the lake.", True),
    ("It is important to drink water.", True),
    ("It opened in 1889.", False),
    ("It was a busy port.", False),
    ("They said that it rained.", False),
    ("It's a nuisance to carry a wet umbrella.", True),  # the clause has its own object: it is the subject
    ("It was a view to remember.", False),  # "to remember" lacks its object: the view; "it" refers
    ("It is used to mark the border.", False),  # a passive with a purpose, not "it is said that ..."
    ("It's quiet at night, making it a good place to read.", False),  # the clause hangs on no copula
    ("It's vital for every town to keep a library.", True),
    # The weather: "it" names nothing, whatever verb carries the rain.
    ("It rained for three days in Mumbai.", True),
    ("It never stops snowing on the summit.", True),
    ("It started to drizzle after lunch.", True),
    ("It pours water into the tank.", False),  # pouring something: a thing does it
    ("It hails from a village in Norway.", False),
])
def test_a_placeholder_it_is_told_from_a_referring_one(parser: SentenceParser, sentence: str, dummy: bool) -> None:
    assert parser.dummy_subject(sentence) is dummy


def test_a_missing_parser_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "PACKAGE", "no_such_parser_package")
    with pytest.raises(ModelFileError, match="pip install"):
        SentenceParser.load()


@pytest.mark.parametrize(("question", "first"), [
    ("Can snoring affect relationships?", "snoring"),  # parsed with "snoring" as the root, "affect" under it
    ("Does running help your knees?", "running"),  # parsed with "running" modifying "help"
    ("Is swimming good for the back?", "swimming"),
    # Not a bare gerund: an adverb or an object between it and the verb, a noun it modifies, an "-ing" noun.
    ("Can eating late affect sleep?", "sleep"),
    ("Are cycling lanes safe?", "lanes"),
    ("Does nothing help?", "nothing"),
])
def test_a_yes_no_question_about_a_bare_gerund_names_it_first(parser: SentenceParser, question: str,
                                                                first: str) -> None:
    mentions = parser.mentions(question)
    assert mentions[0].text == first
    assert mentions[0].clause == (first.endswith("ing") and first != "nothing")


def test_an_activity_after_a_preposition_is_a_mention_after_every_noun(parser: SentenceParser) -> None:
    mentions = parser.mentions("Are there any risks of lifting heavy boxes?")
    assert [(m.text, m.clause) for m in mentions] == [("heavy boxes", False), ("lifting heavy boxes", True)]
    assert not mentions[-1].plural and not mentions[-1].subject


@pytest.mark.parametrize(("sentence", "phrase"), [
    ("These colors have gained fans.", ("These colors", "colors", True)),
    ("This big old bridge is closed.", ("This big old bridge", "bridge", False)),
    ("That was a hard winter.", None),  # a demonstrative standing alone
    ("Those are mine.", None),
    ("The bridge is closed.", None),
])
def test_the_phrase_a_demonstrative_opens(parser: SentenceParser, sentence: str, phrase: tuple | None) -> None:
    assert parser.demonstrative_phrase(sentence) == phrase
