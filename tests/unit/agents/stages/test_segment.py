import pytest

from agents.model.prompting import PromptTemplate
from agents.stages.segment import chunk_sentences, classify_sentence, is_grounded, segment
from schemas import ContextLine, Role, SkipReason, Turn


def turn(text: str) -> Turn:
    return Turn(conversation_id="c1", turn_id="B3", role=Role.ASSISTANT, text=text)


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        ("Hello there!", SkipReason.GREETING),
        ("Thanks for asking.", SkipReason.GREETING),
        ("Have a nice trip.", SkipReason.GREETING),
        ("Which planet do you mean?", SkipReason.QUESTION),
        ("I think jazz is the best music.", SkipReason.OPINION),
        ("In my opinion, Rome is lovelier.", SkipReason.OPINION),
        ("Neptune is the eighth planet.", None),
        ("Hello, the Eiffel Tower opened in 1889 for the World's Fair in Paris.", None),
    ],
)
def test_classify_sentence(sentence: str, reason: SkipReason | None) -> None:
    assert classify_sentence(sentence) is reason


def test_grounding_allows_context_words_but_not_inventions() -> None:
    context = "user: Which is the eighth planet?"
    assert is_grounded("Neptune is the eighth planet.", "Neptune.", context)
    assert not is_grounded("Jupiter has 95 moons.", "Neptune.", context)


def test_long_text_is_chunked_within_the_limit() -> None:
    chunks = chunk_sentences(["a" * 50, "b" * 50, "c" * 50], 120)
    assert chunks == ["a" * 50 + " " + "b" * 50, "c" * 50]


async def test_segment_resolves_context_and_records_skips(scripted) -> None:
    runner, backend = scripted({"segment": '{"claims":["Neptune is the eighth planet.","Jupiter has 95 moons."]}'})
    context = [ContextLine(role=Role.USER, text="Which is the eighth planet?")]
    result = await segment(turn("Hi! Neptune. Do you like space?"), context, runner, PromptTemplate.load("segment"))
    assert [c.text for c in result.claims] == ["Neptune is the eighth planet."]
    reasons = {s.text: s.reason for s in result.skipped}
    assert reasons == {
        "Hi!": SkipReason.GREETING,
        "Do you like space?": SkipReason.QUESTION,
        "Jupiter has 95 moons.": SkipReason.UNGROUNDED,
    }
    assert "Which is the eighth planet?" in backend.prompts[0].variable
    assert result.claims[0].claim_id == (await segment(turn("Hi! Neptune. Do you like space?"), context, runner,
                                                       PromptTemplate.load("segment"))).claims[0].claim_id


async def test_turn_without_facts_needs_no_model_call(scripted) -> None:
    runner, backend = scripted({})
    result = await segment(turn("Hello! How can I help you today?"), [], runner, PromptTemplate.load("segment"))
    assert result.claims == () and len(result.skipped) == 2
    assert backend.prompts == []


async def test_sentence_the_model_ignores_is_checked_whole(scripted) -> None:
    runner, _ = scripted({"segment": '{"claims":[]}'})
    result = await segment(turn("The Nile flows north into the Mediterranean."), [], runner, PromptTemplate.load("segment"))
    assert [c.text for c in result.claims] == ["The Nile flows north into the Mediterranean."]
