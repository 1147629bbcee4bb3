from dataclasses import replace

import pytest

from agents.evidence.passages import assemble_evidence
from agents.model.prompting import PromptTemplate
from agents.stages.justify import apply_corrections, justify, score_fingract
from schemas import Citation, ErrorFix, Label, TurnVerdict
from tests.support.records import claim_verdict, claimset, passage

EVIDENCE = [passage("The Eiffel Tower is in Paris, France. It was completed in 1889.")]
CITE = Citation(passage_id="p1", url="https://example.org/a", title="t", published_at="2023-05-01")


def fix(correction: str, citations: tuple[Citation, ...] = (CITE,)) -> ErrorFix:
    return ErrorFix(claim_id="claim-0", claim_text="The Eiffel Tower is in Berlin.", label=Label.FALSE,
                    correction=correction, citations=citations)


@pytest.mark.parametrize(
    ("the_fix", "expected"),
    [
        (fix("The Eiffel Tower is in Paris."), (2, 2, 3, 7, True)),  # named, corrected from the evidence, cited
        (fix("The Eiffel Tower is in Rome."), (2, 0, 2, 4, True)),  # correction not in the evidence
        (fix("The Eiffel Tower is in Berlin, France."), (2, 0, 2, 4, True)),  # adds a fact, keeps the wrong one
        (fix("The Eiffel Tower is in Paris.", ()), (2, 0, 0, 2, False)),  # uncited: nothing backs the new words
        (fix(""), (2, 0, 2, 4, True)),  # no correction at all
        (fix("The Eiffel Tower is in Paris.", (Citation("p1", "ftp://x", "t", None),)), (2, 2, 0, 4, True)),
    ],
)
def test_fingract_arithmetic(the_fix: ErrorFix, expected: tuple[int, int, int, int, bool]) -> None:
    justification = "False: 'The Eiffel Tower is in Berlin.'"
    score, feedback = score_fingract(justification, [the_fix], [], EVIDENCE)
    got = (score.error_detection, score.correction, score.links, score.total, score.acceptable)
    assert got == expected
    assert score.total == score.error_detection + score.correction + score.links
    assert (feedback == "") == (score.total == 7)


def test_unnamed_error_loses_detection_points() -> None:
    score, feedback = score_fingract("nothing here", [fix("The Eiffel Tower is in Paris.")], [], EVIDENCE)
    assert score.error_detection == 0
    assert "name the error" in feedback


def test_apply_corrections_replaces_the_wrong_span() -> None:
    turn = "The Eiffel Tower is in Berlin and was finished in 1889."
    assert apply_corrections(turn, [fix("The Eiffel Tower is in Paris.")]) == (
        "The Eiffel Tower is in Paris and was finished in 1889."
    )
    odd = ErrorFix("c", "Totally different wording.", Label.FALSE, "A new sentence.", ())
    assert apply_corrections(turn, [odd]).endswith("[Correction: A new sentence.]")


def test_apply_corrections_changes_what_was_wrong_and_adds_nothing_twice() -> None:
    # The claim left the turn's "in 1969" out; the source's restatement carries the full date. Only the name
    # was wrong: the date is not spliced in beside the one the turn already gives.
    turn = "Buzz Aldrin was the first person to walk on the Moon, in 1969."
    armstrong = ErrorFix("c", "Buzz Aldrin was the first person to walk on the Moon.", Label.FALSE,
                         "Neil Armstrong was the first person to walk on the Moon, on 20 July 1969.", ())
    assert apply_corrections(turn, [armstrong]) == "Neil Armstrong was the first person to walk on the Moon, in 1969."
    water = ErrorFix("c", "At sea level water boils at 90 degrees Celsius.", Label.FALSE,
                     "At sea level, pure water boils at 100 degrees Celsius.", ())
    assert apply_corrections(water.claim_text, [water]) == "At sea level water boils at 100 degrees Celsius."


async def test_true_turn_gets_no_correction(scripted) -> None:
    runner, backend = scripted({})
    evidence = assemble_evidence(claimset("The Eiffel Tower is in Paris."), EVIDENCE)
    verdict = TurnVerdict("v", evidence, (claim_verdict(0, "The Eiffel Tower is in Paris.", Label.TRUE),), Label.TRUE)
    assert await justify(verdict, runner, PromptTemplate.load("justify")) is None
    assert backend.prompts == []


async def test_revision_loop_stops_at_max_rounds_and_keeps_every_round(scripted) -> None:
    # The scripted model keeps proposing a correction the evidence does not support.
    runner, backend = scripted({"justify": '{"corrected":"The Eiffel Tower is in Rome.","evidence":1}'})
    claim = "The Eiffel Tower is in Berlin."
    # Evidence that does not restate the claim, so there is no sentence of its own to fall back on.
    evidence = assemble_evidence(claimset(claim), [passage("The Eiffel Tower was completed in 1889 for a fair.")])
    verdict = TurnVerdict("v", evidence, (claim_verdict(0, claim, Label.FALSE),), Label.FALSE)
    correction = await justify(verdict, runner, PromptTemplate.load("justify"), max_rounds=2)
    assert correction is not None
    assert [r.round for r in correction.rounds] == [0, 1, 2]
    assert "Reviewer:" in backend.prompts[1].variable  # feedback reaches the revision
    assert correction.score.correction == 0


async def test_good_correction_is_accepted_in_one_round(scripted) -> None:
    runner, _ = scripted({"justify": '{"corrected":"The Eiffel Tower is in Paris.","evidence":1}'})
    claim = "The Eiffel Tower is in Berlin."
    evidence = assemble_evidence(claimset(claim, turn_text="The Eiffel Tower is in Berlin and opened in 1889."), EVIDENCE)
    verdict = TurnVerdict("v", evidence, (claim_verdict(0, claim, Label.FALSE),), Label.FALSE)
    correction = await justify(verdict, runner, PromptTemplate.load("justify"))
    assert correction is not None and len(correction.rounds) == 1
    assert correction.score.total == 7
    assert correction.corrected_text == "The Eiffel Tower is in Paris and opened in 1889."
    assert correction.errors[0].citations[0].url == "https://example.org/a"
    assert "2023-05-01" in correction.justification


async def test_a_rewrite_that_keeps_the_contradicted_value_gives_way_to_the_evidence_sentence(scripted) -> None:
    # The small model added the date but kept Aldrin; the passage's own clause is the fix.
    runner, _ = scripted({"justify": '{"corrected":"Buzz Aldrin was the first person to walk on the Moon, on 20 July 1969.","evidence":1}'})
    claim = "Buzz Aldrin was the first person to walk on the Moon."
    moon = passage("Neil Armstrong was the first person to walk on the Moon, on 20 July 1969; Buzz Aldrin followed him.")
    evidence = assemble_evidence(claimset(claim), [moon])
    verdict = TurnVerdict("v", evidence, (claim_verdict(0, claim, Label.FALSE),), Label.FALSE)
    correction = await justify(verdict, runner, PromptTemplate.load("justify"))
    assert correction is not None and len(correction.rounds) == 1 and correction.score.total == 7
    assert correction.errors[0].correction == "Neil Armstrong was the first person to walk on the Moon, on 20 July 1969"
    assert correction.errors[0].citations[0].passage_id == moon.passage_id


async def test_a_quoted_title_is_corrected_in_place(scripted) -> None:
    # The model is shown no straight quote to copy, and its typographic ones are made plain again, so the
    # fix lands on the title in the turn, not in a note appended to it.
    runner, backend = scripted({"justify": '{"corrected":"Kim Yool-ho starred in \u201cTrain to Busan\u201d.","evidence":1}'})
    claim = 'Kim Yool-ho starred in "The Map Against the World".'
    busan = passage('Kim Yool-ho starred in "Train to Busan", a 2016 film.')
    evidence = assemble_evidence(claimset(claim, turn_text='Kim Yool-ho starred in "The Map Against the World".'), [busan])
    verdict = TurnVerdict("v", evidence, (claim_verdict(0, claim, Label.FALSE),), Label.FALSE)
    correction = await justify(verdict, runner, PromptTemplate.load("justify"))
    assert '"' not in backend.prompts[0].variable
    assert correction is not None and correction.score.total == 7
    assert correction.corrected_text == 'Kim Yool-ho starred in "Train to Busan".'


async def test_the_users_question_is_not_what_the_rewrite_got_wrong(scripted) -> None:
    # A bare answer's claim repeats the question, whose names the evidence spells in full ("Kenneth Charles
    # Loach"). The model's right rewrite keeps the question; it is not swapped for a passage sentence that
    # merely restates the question's names and says nothing about who was born first.
    import dataclasses

    from agents.stages.standalone import with_question
    from schemas import ContextLine, Role

    question = "Who was born first, Ken Loach or Mark L. Lester?"
    claim, rewrite = with_question(question, "Mark L. Lester"), with_question(question, "Ken Loach")
    runner, _ = scripted({"justify": f'{{"corrected":"{rewrite}","evidence":1}}'})
    directors = passage("Kenneth Charles Loach (born 17 June 1936) is an English film director. "
                        "Mark Leslie Lester (born 1946) is an American film director.")
    asked = dataclasses.replace(claimset(claim), context=(ContextLine(role=Role.USER, text=question),))
    verdict = TurnVerdict("v", assemble_evidence(asked, [directors]), (claim_verdict(0, claim, Label.FALSE),), Label.FALSE)
    correction = await justify(verdict, runner, PromptTemplate.load("justify"))
    assert correction is not None
    assert correction.errors[0].correction == rewrite


async def test_a_fact_said_twice_is_corrected_once(scripted) -> None:
    runner, backend = scripted({"justify": '{"corrected":"The Eiffel Tower is in Paris.","evidence":1}'})
    first, again, other = "The Eiffel Tower is in Berlin.", "The Eiffel Tower stands in Berlin.", "It is made of wood."
    cs = claimset(first, again, other)
    cs = replace(cs, claims=(cs.claims[0], replace(cs.claims[1], restates=0), cs.claims[2]))
    verdict = TurnVerdict("v", assemble_evidence(cs, EVIDENCE), (
        claim_verdict(0, first, Label.UNVERIFIABLE), claim_verdict(1, again, Label.FALSE),
        claim_verdict(2, other, Label.UNVERIFIABLE)), Label.FALSE)
    correction = await justify(verdict, runner, PromptTemplate.load("justify"))
    assert correction is not None
    # The group is named by its stricter verdict (false), once; the other claim is still named as unverifiable.
    assert [e.claim_text for e in correction.errors] == [again]
    assert len(backend.prompts) == 1
    assert first not in correction.justification and other in correction.justification
