"""What the reply adds must be in the evidence: the answer-support signals."""

from __future__ import annotations

import pytest

from agents.scoring.calibration import FEATURE_NAMES
from agents.scoring.signals import answer_support, claim_signals
from schemas import ContextLine, Role
from tests.support.records import passage

KEW = passage("Kew is a suburb of Johannesburg, South Africa. It lies in Gauteng, the wealthiest province.")
ASKED = (ContextLine(role=Role.USER, text="What city in Gauteng, South Africa has a suburb called Kew?"),)


def test_a_right_bare_answer_is_found_in_the_evidence() -> None:
    right = answer_support("What city in Gauteng, South Africa has a suburb called Kew? Johannesburg.", [KEW], ASKED)
    assert right.word_support == 1.0
    assert right.names_missing == 0.0 and right.missing == ()


def test_a_made_up_answer_is_missing_even_when_it_repeats_the_question() -> None:
    # The question's words (Gauteng, South Africa, Kew) are in the evidence too; they must not count for the reply.
    wrong = answer_support("Pretoria, in Gauteng, South Africa, has a suburb called Kew.", [KEW], ASKED)
    assert wrong.names_missing == 1.0 and wrong.missing == ("pretoria",)
    assert wrong.word_support < 0.5


def test_numbers_the_user_gave_are_not_the_reply_s_own() -> None:
    asked = (ContextLine(role=Role.USER, text="Was the tower finished in 1889?"),)
    tower = passage("The tower was completed in 1889 and is 330 metres tall.")
    assert answer_support("Yes, it was finished in 1889 and is 300 metres tall.", [tower], asked).numbers_missing == 1.0
    assert answer_support("Yes, it was finished in 1889 and is 330 metres tall.", [tower], asked).numbers_missing == 0.0


def test_without_a_question_the_whole_claim_is_the_reply_s_own() -> None:
    support = answer_support("Johannesburg is in Gauteng.", [KEW])
    assert support.word_support == 1.0 and support.names_missing == 0.0


@pytest.mark.parametrize("context", [(), ASKED])
def test_the_signals_fill_every_feature_and_explain_a_missing_name(context: tuple[ContextLine, ...]) -> None:
    signals = claim_signals("Pretoria has a suburb called Kew.", [KEW], context)
    assert len(signals.values) + 8 == len(FEATURE_NAMES)
    assert "the reply's pretoria not in the evidence" in signals.notes


def test_only_the_passage_about_the_claim_backs_it() -> None:
    asked = (ContextLine(role=Role.USER, text="Where is the Eiffel Tower?"),)
    tower = passage("The Eiffel Tower is a wrought-iron tower in Paris, France.", pid="p1")
    wall = passage("The Berlin Wall fell in November 1989.", pid="p2")
    support = answer_support("The Eiffel Tower is in Berlin.", [tower, wall], asked)
    assert support.word_support == 0.0 and support.names_missing == 1.0 and support.missing == ("berlin",)


def test_version_numbers_in_the_evidence_are_compared_as_written() -> None:
    # "0.9.0" is no single quantity: reading it as one raised ValueError and lost the turn's verdict.
    release = passage("Python's first public release, version 0.9.0, appeared in February 1991.")
    right = answer_support("The first release was version 0.9.0, in 1991.", [release])
    wrong = answer_support("The first release was version 0.9.1, in 1991.", [release])
    assert right.numbers_missing == 0.0
    assert wrong.missing == ("0.9.1",)  # of its two numbers, 1991 is in the evidence
    notes = claim_signals("Version 1.0.0 came out in 1991.", [release]).notes
    assert "number(s) 1.0.0 not in the evidence" in notes


def test_a_possessive_name_is_the_name_itself() -> None:
    # "Egypt's coast" names Egypt, which the passage holds: no name conflict.
    nile = passage("The Nile flows north and empties into the Mediterranean Sea in Egypt, after Khartoum in Sudan.")
    notes = claim_signals("The Nile reaches the Mediterranean on Egypt's coast.", [nile]).notes
    assert not any(note.startswith("name(s)") for note in notes)
    assert any(n.startswith("name(s) libya") for n in claim_signals("The Nile reaches the sea on Libya's coast.", [nile]).notes)
    # ... and so it is where the passage says it with the ending too.
    hospital = passage("Fleming worked at St Mary's Hospital in London, where Wright ran the lab.")
    notes = claim_signals("The discovery was made at St Mary's in London.", [hospital]).notes
    assert not any(note.startswith("name(s)") for note in notes)


def test_an_abbreviation_is_found_as_written() -> None:
    # "D.C." is the words "d" and "c" of the passage; looked up whole, it is there.
    hospital = passage("MedStar Washington Hospital Center is the largest private hospital in Washington, D.C., United States.")
    notes = claim_signals("The largest private hospital in Washington, D.C. is MedStar Washington Hospital Center.", [hospital]).notes
    assert not any(note.startswith("name(s)") for note in notes)
    other = claim_signals("The largest private hospital in Washington, N.Y. is MedStar Washington Hospital Center.", [hospital])
    assert any(note.startswith("name(s) n.y not in the evidence") for note in other.notes)


def test_a_hedge_on_a_number_is_neither_a_name_nor_a_word_to_support() -> None:
    # "Around 38 km" says the passage's "38 kilometres" with a hedge: nothing in it is missing from the passage.
    tunnel = passage("The tunnel is about 50 kilometres long, of which 38 kilometres run under the sea.")
    support = answer_support("Around 38 km of it runs under the sea.", [tunnel])
    assert support.missing == () and support.names_missing == 0.0  # "Around" was taken for a name
    assert answer_support("Roughly 38 kilometres run under the sea.", [tunnel]).word_support == 1.0


def test_a_name_in_the_users_question_is_no_value_the_reply_swapped() -> None:
    # A bare answer's claim repeats the question; a sentence that restates it names the other candidate the
    # user asked about, which the reply never claimed. Only the answer's own values may be swapped.
    from agents.scoring.signals import value_swap
    from agents.stages.standalone import with_question

    question = "Which director is American, Mark L. Lester or Ken Loach?"
    asked = (ContextLine(role=Role.USER, text=question),)
    directors = [passage("Mark Leslie Lester is an American film director. Kenneth Charles Loach is an English film director.")]
    right, wrong = with_question(question, "Mark L. Lester"), with_question(question, "Ken Loach")
    assert claim_signals(right, directors, asked).swap is None
    swap = claim_signals(wrong, directors, asked).swap
    assert swap is not None and swap.claimed == ("loach",) and swap.stated == ("leslie",)
    assert value_swap(right, directors) is not None  # the whole claim, question and all, would be "swapped"
