import pytest

from agents.stages.standalone import (
    drop_duplicates,
    is_bare_answer,
    is_user_text,
    leading_pronoun,
    names_nobody,
    near_duplicate,
    resolve_pronoun,
    user_statements,
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


def test_the_question_leaves_out_what_the_user_said_before_it() -> None:
    # The user's own statements are not the reply's claim, even when the reply is a bare "Yes!".
    said = [ContextLine(role=Role.USER, text="Wow! I studied law in Lyon. Have you ever been to France?")]
    assert last_question(said) == "Have you ever been to France?"


@pytest.mark.parametrize(("claim", "earlier", "resolved"), [
    # "he" and "she": the person named last, also past earlier "he"s; never a place, a work or an interjection
    ("He was born in 1946.", ["I like Jaws.", "Steven Spielberg directed Jaws."], "Steven Spielberg was born in 1946."),
    ("His first film was Duel.", ["Do you know Steven Spielberg?"], "Steven Spielberg's first film was Duel."),
    ("He won again in 1988.", ["Did you see Carl Lewis run?", "He won gold in 1984.", "Really?"],
     "Carl Lewis won again in 1988."),
    ("He studied law.", ["The Berlin Wall fell in 1989."], "He studied law."),
    ("She sang in Paris.", ["Absolutely!", "What did she do then?"], "She sang in Paris."),
    # "it" and "they": the nearest mention of the same number, subjects first; a verb contracted onto it is spelt out
    ("It opened in 1889.", ["The Eiffel Tower is in Paris."], "The Eiffel Tower opened in 1889."),
    ("They slept in tents.", ["How did Roman soldiers travel across Gaul?"], "Roman soldiers slept in tents."),
    ("Its roof is made of copper.", ["The old library stands on the hill."], "The old library's roof is made of copper."),
    ("Their nests are made of mud.", ["Swallows return every spring."], "Swallows' nests are made of mud."),
    ("It's a protected species.", ["A snow leopard was seen near the village."], "The snow leopard is a protected species."),
    ("It took a decade.", ["Building the canal across the isthmus was slow."],
     "Building the canal across the isthmus took a decade."),
    # A name that looks plural but is one thing, as its verb shows, is what a later "it" stands for.
    ("It joined the Commonwealth in 1973.", ["Is Nassau the capital of an island nation?",
                                            "The Bahamas is a nation of some seven hundred islands."],
     "The Bahamas joined the Commonwealth in 1973."),
    # An "it" that only holds a clause's place points nowhere, so it does not stop the search.
    ("It would need to be dim.", ["Good signs make it easier to find the seats.", "What about a lamp on the stage?"],
     "The lamp on the stage would need to be dim."),
    # A subject one sentence further back beats a mere mention in the nearest sentence.
    ("It was rebuilt in 1950.", ["The bridge crossed the river.", "Floods damaged the road near the town."],
     "The bridge was rebuilt in 1950."),
    # "it" never stands for a person, and "they" never for one thing
    ("It sold millions of copies.", ["Ernest Hemingway wrote a novel about the sea."],
     "The novel about the sea sold millions of copies."),
    ("They won the cup.", ["The team played well."], "They won the cup."),
    # An activity after a preposition is what "it" means when no noun of its sentence fits, never before one.
    ("It can cause back pain.", ["Are there any risks of lifting heavy boxes?"],
     "Lifting heavy boxes can cause back pain."),
    ("It is beautiful in spring.", ["I am thinking of visiting Kyoto."], "Kyoto is beautiful in spring."),
    # A mention that names its thing beats a pronoun as near (which only says something earlier was meant).
    ("It can lead to falls.", ["Is it worth the effort?", "Are there any dangers in climbing tall trees?"],
     "Climbing tall trees can lead to falls."),
    # A yes/no question about a bare gerund, which the parser reads as the question's verb, names that activity.
    ("It strengthens the muscles around them.", ["Does running help your knees?"],
     "Running strengthens the muscles around them."),
    ("It can ease back pain.", ["Is swimming good for the back?"], "Swimming can ease back pain."),
    # A demonstrative and its noun: the nearest earlier mention of that noun, in the same number, that says more.
    ("These stamps are worth a fortune.", ["My grandfather collected rare postage stamps."],
     "The rare postage stamps are worth a fortune."),
    ("This house is old.", ["They bought a wooden house by the lake."], "The wooden house is old."),
    ("This house is old.", ["They bought two wooden houses."], "This house is old."),
    # ... never one that points elsewhere itself, names nothing in particular, or says no more than the noun.
    ("This bridge is old.", ["They crossed that bridge."], "This bridge is old."),
    ("Those episodes were funny.", ["Did you watch any particular episodes?"], "Those episodes were funny."),
    ("Those episodes were funny.", ["I watched the episodes."], "Those episodes were funny."),
    # An "it" or "they" that continues an earlier "it" or "they" is a chain: left as it is, not guessed.
    ("It must have been hard.", ["Then the castle fell.", "It was besieged for a year."], "It must have been hard."),
    # Nothing to resolve: a placeholder "it", an event behind "that", nothing to point to, no pronoun.
    ("It is said that the tower leans.", ["The Pisa tower is in Italy."], "It is said that the tower leans."),
    ("That was a hard winter for the army.", ["Napoleon's army retreated from Moscow."],
     "That was a hard winter for the army."),
    ("They used a mounting block.", ["what a lovely day"], "They used a mounting block."),
    ("Paris is big.", ["Rome is old."], "Paris is big."),
])
def test_leading_pronouns_take_what_they_stand_for(claim: str, earlier: list[str], resolved: str, parser) -> None:
    assert resolve_pronoun(claim, earlier, parser) == resolved


def test_a_claim_about_he_names_nobody_only_when_no_person_was_named(parser) -> None:
    assert names_nobody("He won the race.", ["The runner crossed the line first."], (), parser)
    assert not names_nobody("He won the race.", ["Usain Bolt crossed the line first."], (), parser)
    # named in turns too old to be read again
    assert not names_nobody("He won the race.", ["The runner crossed the line first."], ("Usain Bolt",), parser)
    assert resolve_pronoun("He won the race.", ["The crowd cheered."], parser, ("Usain Bolt",)) == "Usain Bolt won the race."
    # not about a person: left to the other rules
    assert not names_nobody("It won an award.", ["The crowd cheered."], (), parser)


def test_what_counts_as_a_pronoun() -> None:
    assert leading_pronoun("They won.") == "They" and leading_pronoun("Theodore won.") is None


def test_near_duplicates_keep_the_fullest_claim() -> None:
    assert near_duplicate("Jon Favreau directed Iron Man.", "Iron Man was directed by Jon Favreau.")
    assert not near_duplicate("Jon Favreau directed Iron Man.", "Jon Favreau directed Elf.")
    # The same words inflected differently are the same claim.
    assert near_duplicate("The pier usually gets crowded at noon.", "The pier can get crowded at noon.")
    assert not near_duplicate("The museum opened in 1900.", "The museums opened in 1901.")
    # ... also where the ending replaced a final "e", and not at the "eed" of a verb's stem.
    assert near_duplicate("Practicing yoga helps sleep.", "Practice yoga helps sleep.")
    assert near_duplicate("The Dutch team succeeded in 1988.", "The Dutch team succeed in 1988.")
    assert near_duplicate("Chess games last hours.", "A chess game lasts hours.")
    assert not near_duplicate("The Dutch team succeeded in 1988.", "The Dutch team failed in 1988.")
    assert drop_duplicates(["Iron Man came out in 2008.", "Elf came out in 2003.", "Iron Man came out in 2008 worldwide."]) == [
        "Iron Man came out in 2008 worldwide.", "Elf came out in 2003."]


def test_user_text_is_the_users_words_not_the_replys() -> None:
    context = [ContextLine(role=Role.USER, text="Is the Louvre the largest art museum in the world?")]
    assert is_user_text("The Louvre is the largest art museum in the world.", "Yes, it has 35,000 works on show.", context)
    assert not is_user_text("The Louvre shows 35,000 works.", "Yes, the Louvre shows 35,000 works.", context)


def test_what_the_user_stated_is_not_the_replys_claim() -> None:
    context = [ContextLine(role=Role.USER, text="Summer is coming. I paddle a blue kayak on the lake.")]
    # The reply shares two of its three words with the user's statement, but does not make it.
    assert is_user_text("I paddle a blue kayak.", "Great! A blue kayak sounds fun.", context)
    # The reply that states it makes it the reply's claim.
    assert not is_user_text("I paddle a blue kayak.", "I see: you paddle a blue kayak.", context)
    assert not is_user_text("A blue kayak sounds fun.", "Great! A blue kayak sounds fun.", context)
    # Asking about it is not saying it.
    booked = [ContextLine(role=Role.USER, text="I booked a table for four tonight.")]
    assert is_user_text("I booked a table for four tonight.", "Good evening! Did you book a table for four tonight?", booked)


def test_a_question_can_open_with_a_statement_of_the_users() -> None:
    asked = [ContextLine(role=Role.USER, text="Ada Lovelace was a mathematician, which machine did she write about?")]
    assert user_statements(asked) == ["Ada Lovelace was a mathematician"]
    reply = "Ada Lovelace wrote about the Analytical Engine."
    assert is_user_text("Ada Lovelace was a mathematician.", reply, asked)
    assert not is_user_text("Ada Lovelace wrote about the Analytical Engine.", reply, asked)
    # A question is a statement of the user's only before its question word, and only with a verb.
    assert user_statements([ContextLine(role=Role.USER, text="In Paris, which museum is the largest?")]) == []
    assert user_statements([ContextLine(role=Role.ASSISTANT, text="The tower is tall.")]) == []


def test_a_fuller_claim_replaces_every_claim_it_contains() -> None:
    # The model split a sentence into its names; the sentence itself, checked whole, holds them all.
    claims = ["The Twilite Tone", "Remi Kabaka Jr.", "Elf came out in 2003.",
              "Let Me Out was recorded by The Twilite Tone and Remi Kabaka Jr."]
    assert drop_duplicates(claims) == ["Let Me Out was recorded by The Twilite Tone and Remi Kabaka Jr.", "Elf came out in 2003."]
