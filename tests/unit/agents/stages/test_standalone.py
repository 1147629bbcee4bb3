import pytest

from agents.stages.standalone import (
    drop_duplicates,
    first_name,
    is_bare_answer,
    is_user_text,
    leading_pronoun,
    near_duplicate,
    resolve_pronoun,
    with_question,
)
from agents.text import last_question
from schemas import ContextLine, Role


@pytest.mark.parametrize(("answer", "question", "bare"), [
    ("Johannesburg", "What city in Gauteng has a suburb called Kew?", True),
    ("First for Women.", "Which magazine was started first, Arthur's Magazine or First for Women?", True),
    ("Arthur's Magazine.", "Which magazine was started first, Arthur's Magazine or First for Women?", True),
    ("It's in Paris.", "Where is the Eiffel Tower?", False),
    ("Niagara County", "What New York county is Hartland Swamp located in?", True),
    ("The Berlin Wall fell in 1989.", "When did the Berlin Wall fall?", False),  # restates the subject
    ("Mount Everest is 8,849 metres tall.", "How tall is Mount Everest?", False),  # has a verb
    ("It was founded by two brothers in Ohio in 1903.", "Who founded it?", False),  # too long to be bare
])
def test_bare_answers(answer: str, question: str, bare: bool) -> None:
    assert is_bare_answer(answer, question) is bare


def test_a_bare_answer_joined_to_its_question() -> None:
    assert with_question(" Who directed Jaws? ", "Steven Spielberg") == "Who directed Jaws? Steven Spielberg."


def test_the_question_is_the_last_user_line_when_it_asks() -> None:
    asked = [ContextLine(role=Role.USER, text="Who won?"), ContextLine(role=Role.ASSISTANT, text="Let me see.")]
    assert last_question(asked) == "Who won?"
    assert last_question([ContextLine(role=Role.USER, text="Tell me about Rome.")]) is None
    assert last_question([]) is None


@pytest.mark.parametrize(("claim", "earlier", "resolved"), [
    ("It opened in 1889.", ["The Eiffel Tower is in Paris."], "Eiffel Tower opened in 1889."),
    ("He was born in 1946.", ["I like Jaws.", "Steven Spielberg directed Jaws."], "Steven Spielberg was born in 1946."),
    ("His first film was Duel.", ["Do you know Steven Spielberg?"], "Steven Spielberg's first film was Duel."),
    ("They used a mounting block.", ["what a lovely day"], "They used a mounting block."),  # nothing to refer to
    ("Paris is big.", ["Rome is old."], "Paris is big."),  # no pronoun
])
def test_leading_pronouns_take_the_nearest_earlier_name(claim: str, earlier: list[str], resolved: str) -> None:
    assert resolve_pronoun(claim, earlier) == resolved


def test_what_counts_as_a_pronoun_and_a_name() -> None:
    assert leading_pronoun("They won.") == "They" and leading_pronoun("Theodore won.") is None
    assert first_name("Yes, the Bank of England raised rates.") == "Bank of England"
    assert first_name("I think so.") is None


def test_near_duplicates_keep_the_fullest_claim() -> None:
    assert near_duplicate("Jon Favreau directed Iron Man.", "Iron Man was directed by Jon Favreau.")
    assert not near_duplicate("Jon Favreau directed Iron Man.", "Jon Favreau directed Elf.")
    assert drop_duplicates(["Iron Man came out in 2008.", "Elf came out in 2003.", "Iron Man came out in 2008 worldwide."]) == [
        "Iron Man came out in 2008 worldwide.", "Elf came out in 2003."]


def test_user_text_is_the_users_words_not_the_replys() -> None:
    context = [ContextLine(role=Role.USER, text="Is the Louvre the largest art museum in the world?")]
    assert is_user_text("The Louvre is the largest art museum in the world.", "Yes, it has 35,000 works on show.", context)
    assert not is_user_text("The Louvre shows 35,000 works.", "Yes, the Louvre shows 35,000 works.", context)
