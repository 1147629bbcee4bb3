import pytest

from agents.evaluation.atomic_claims import answer_sentence, atomic_cases, changed_number, read_atomic, replaced_name
from agents.evaluation.datasets import ClaimCase
from agents.text import numbers
from schemas import Label, Role, Turn
from tests.conftest import SHARED_DATA
from tests.support.records import passage


def case(i: int, answer: str) -> ClaimCase:
    turn = Turn(conversation_id=f"c{i}", turn_id="claim", role=Role.ASSISTANT, text=f"claim {i}")
    return ClaimCase(case_id=f"c{i}", turn=turn, passages=(passage(answer),), label=Label.TRUE)


def test_answer_sentence_is_a_declarative_sentence_with_a_name_or_number() -> None:
    evidence = [
        {"answer_type": "Boolean", "answer": "Yes"},
        {"answer_type": "Extractive", "answer": "Was it built in 1889 by the city of Paris?"},
        {"answer_type": "Abstractive", "answer": "the tower was built in 1889 for the fair"},
        {"answer_type": "Extractive", "answer": "The tower was built in 1889 for the World's Fair. More text."},
    ]
    assert answer_sentence(evidence) == "The tower was built in 1889 for the World's Fair."
    assert answer_sentence([{"answer_type": "Extractive", "answer": "it was nice and tall and old."}]) is None


def test_mutations_change_exactly_one_value() -> None:
    year = changed_number("The tower was finished in 1889.", seed=3)
    assert year is not None and year != "The tower was finished in 1889." and len(numbers(year) - {"1889"}) == 1
    count = changed_number("The river carries 200 tonnes of silt.", seed=0)
    assert count == "The river carries 300 tonnes of silt."
    swapped = replaced_name("The summit was reached by Tenzing Norgay.", ["The race was won by Michael Phelps."], seed=0)
    assert swapped is not None and "Norgay" not in swapped and ("Michael" in swapped or "Phelps" in swapped)


def test_atomic_cases_rotate_labels_against_the_rows_own_evidence() -> None:
    answers = [f"The bridge in Town{i} opened in {1900 + i} with {10 + i} lanes for Mayor Smith{i}." for i in range(6)]
    made = atomic_cases([case(i, a) for i, a in enumerate(answers)], answers)
    assert [c.label for c in made] == [Label.TRUE, Label.FALSE, Label.UNVERIFIABLE] * 2
    true, false, unverifiable = made[:3]
    assert true.turn.text == answers[0] and true.passages[0].text == answers[0]
    assert false.turn.text != answers[1] and false.passages[0].text == answers[1]
    assert unverifiable.turn.text in answers and unverifiable.turn.text != answers[2]


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is not beside the checkout")
def test_atomic_set_from_the_benchmark_file_is_balanced_and_deterministic() -> None:
    path = SHARED_DATA / "averitec" / "dev-public.jsonl"
    first, second = read_atomic(path), read_atomic(path)
    assert [c.turn.text for c in first] == [c.turn.text for c in second]
    counts = {label: sum(c.label is label for c in first) for label in Label}
    assert min(counts.values()) >= 40 and max(counts.values()) - min(counts.values()) <= 1
