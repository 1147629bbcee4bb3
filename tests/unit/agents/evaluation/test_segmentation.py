from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agents.evaluation.segmentation import dialogue_turns, evaluate_segmentation, format_segmentation
from agents.model.prompting import PromptTemplate
from schemas import Role


def write(tmp_path: Path, *rows: dict) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows))
    return path


DIAHALU = {"id": "d1", "label": "factual", "turns": [
    {"speaker": "A1", "role": "user", "text": "Tell me about the famous landmark built for the exposition."},
    {"speaker": "B1", "role": "assistant", "text": "The Eiffel Tower is in Paris. It opened in 1889."},
    {"speaker": "A2", "role": "user", "text": "Is it tall?"},
    {"speaker": "B2", "role": "assistant", "text": "Yes, it is very tall."}]}


def test_assistant_turns_come_with_the_dialogue_before_them(tmp_path: Path) -> None:
    items = dialogue_turns(write(tmp_path, DIAHALU))
    assert [(i.turn.turn_id, len(i.context)) for i in items] == [("B1", 1), ("B2", 3)]
    assert items[1].context[-1].role is Role.USER


def test_an_averitec_claim_is_a_turn_of_its_own_without_context(tmp_path: Path) -> None:
    row = {"id": "averitec-dev-1", "claim": "The bridge opened in 1932.", "claim_date": "1-2-2020", "label": "true",
           "evidence": [{"question": "When did it open?", "answer": "In 1932."}]}
    (item,) = dialogue_turns(write(tmp_path, row))
    assert (item.turn.text, item.turn.role, item.context) == ("The bridge opened in 1932.", Role.ASSISTANT, ())


def test_a_row_of_no_known_set_is_named(tmp_path: Path) -> None:
    from agents.errors import InputError

    with pytest.raises(InputError, match="rows.jsonl:1: neither a DiaHalu row"):
        dialogue_turns(write(tmp_path, {"text": "hello"}))


async def test_each_problem_is_counted(scripted, parser, silent_nli, tmp_path: Path) -> None:
    # The model leaves a pronoun, repeats a claim, echoes the user's question and misses a factual turn.
    runner, _ = scripted({"segment": lambda p: '{"claims":["The Eiffel Tower is in Paris.","The Eiffel Tower is located in Paris.",'
                                              '"It opened in 1889."]}' if "Paris" in p.variable else '{"claims":[]}'})
    report = await evaluate_segmentation(dialogue_turns(write(tmp_path, DIAHALU)), runner, PromptTemplate.load("segment"),
                                         parser, silent_nli, "rows.jsonl", show_progress=False)
    # The stage's own rules already fix the first pronoun and the duplicate. "Yes, it is very tall." is checked
    # whole without its "Yes,", and its "it" continues the user's "Is it tall?", a chain no rule follows: the
    # claim is counted as opening with an unresolved pronoun (the word of assent no longer hides it).
    assert (report.turns, report.factual_turns, report.claims) == (2, 2, 3)
    assert (report.unresolved, report.duplicate_pairs, report.factual_without_claim, report.user_text_claims) == (1, 0, 0, 0)
    assert "meets target" in format_segmentation(report)


def test_the_counters_count_what_a_checker_cannot_use(parser, tmp_path: Path) -> None:
    from agents.evaluation.segmentation import SegmentationReport, score_turn
    from agents.stages.segment import claimset_for

    first, second = dialogue_turns(write(tmp_path, DIAHALU))
    report = SegmentationReport(file="x")
    score_turn(report, first, claimset_for(first.turn, first.context, [
        "It opened in 1889.", "The Eiffel Tower is in Paris.", "The Eiffel Tower is located in Paris.",
        "The famous landmark was built for the exposition.", "It is said that it rained on the opening day."]), parser)
    score_turn(report, second, claimset_for(second.turn, second.context, []), parser)
    assert (report.turns, report.factual_turns, report.claims) == (2, 2, 5)
    # "It is said that ..." opens with an "it" that stands for nothing: counted apart, not as unresolved.
    assert (report.unresolved, report.placeholder_it, report.duplicate_pairs, report.factual_without_claim) == (1, 1, 1, 1)
    assert report.user_text_claims == 1
    assert "MISSES target" in format_segmentation(report)


async def test_a_turn_about_someone_never_named_is_counted_as_skipped_not_as_a_lost_fact(
    scripted, parser, silent_nli, tmp_path: Path
) -> None:
    story = {"id": "d2", "label": "factual", "turns": [
        {"speaker": "A1", "role": "user", "text": "He opened the letter and gasped. What did it say?"},
        {"speaker": "B1", "role": "assistant", "text": "He had won a scholarship to study abroad."}]}
    runner, _ = scripted({})
    report = await evaluate_segmentation(dialogue_turns(write(tmp_path, story)), runner, PromptTemplate.load("segment"),
                                         parser, silent_nli, "rows.jsonl", show_progress=False)
    assert (report.turns, report.factual_turns, report.claims, report.unnamed_person) == (1, 0, 0, 1)
    assert (report.unresolved, report.factual_without_claim) == (0, 0)
    assert "skipped, a person never named:   1" in format_segmentation(report)


def test_pairs_the_duplicate_rule_keeps_but_that_may_say_one_thing_are_counted_to_read(parser, tmp_path: Path) -> None:
    from agents.evaluation.segmentation import SegmentationReport, score_turn
    from agents.stages.segment import claimset_for

    first, _ = dialogue_turns(write(tmp_path, DIAHALU))
    report = SegmentationReport(file="x")
    score_turn(report, first, claimset_for(first.turn, first.context, [
        "The Eiffel Tower is in Paris.", "The Eiffel Tower is located in Paris.",  # the rule's kind: not both
        "The Eiffel Tower opened to visitors in 1889.", "The Eiffel Tower welcomed its first visitors in 1889."]), parser)
    assert (report.duplicate_pairs, report.possible_restatements) == (1, 1)
    text = format_segmentation(report)
    assert "possible restatements left:    1" in text and "welcomed its first visitors" in text
    # A pair the stage marked as one fact in two wordings is counted as grouped, not as left to read.
    grouped = SegmentationReport(file="x")
    score_turn(grouped, first, claimset_for(first.turn, first.context, [
        "The Eiffel Tower opened to visitors in 1889.", "The Eiffel Tower welcomed its first visitors in 1889."],
        restates=[None, 0]), parser)
    assert (grouped.grouped_restatements, grouped.possible_restatements) == (1, 0)
    assert "restatements grouped:          1 pairs" in format_segmentation(grouped)


def test_a_he_the_dialogue_never_names_is_unresolved_and_shown_apart(parser, tmp_path: Path) -> None:
    from agents.evaluation.segmentation import SegmentationReport, score_turn
    from agents.stages.segment import claimset_for

    nameless = {"id": "d2", "label": "factual", "turns": [
        {"speaker": "A1", "role": "user", "text": "He looked at his report card, what did he achieve?"},
        {"speaker": "B1", "role": "assistant", "text": "He got straight A's."},
        {"speaker": "A2", "role": "user", "text": "Was Marie Curie a good student?"},
        {"speaker": "B2", "role": "assistant", "text": "She was."}]}
    first, second = dialogue_turns(write(tmp_path, nameless))
    report = SegmentationReport(file="x")
    score_turn(report, first, claimset_for(first.turn, first.context, ["He got straight A's."]), parser)
    # Named earlier but left unresolved (say the model dropped the name): a segmentation miss, not shown apart.
    score_turn(report, second, claimset_for(second.turn, second.context, ["She was a good student."]), parser)
    assert (report.unresolved, report.never_named) == (2, 1)
    assert "of which a person never named: 1" in format_segmentation(report)


def test_a_bare_answer_with_its_question_is_not_user_text(parser, tmp_path: Path) -> None:
    from agents.evaluation.segmentation import SegmentationReport, score_turn
    from agents.stages.segment import claimset_for
    from agents.stages.standalone import with_question

    row = {"knowledge": "Kew is a suburb of Johannesburg.", "question": "What city has a suburb called Kew?",
           "right_answer": "Johannesburg", "hallucinated_answer": "What city has a suburb called Kew"}
    right, echoed = dialogue_turns(write(tmp_path, row))
    report = SegmentationReport(file="x")
    score_turn(report, right, claimset_for(right.turn, right.context, [with_question(row["question"], "Johannesburg")]), parser)
    assert report.user_text_claims == 0
    score_turn(report, echoed, claimset_for(echoed.turn, echoed.context, ["A city has a suburb called Kew."]), parser)
    assert report.user_text_claims == 0, "the reply itself said it: its words, not only the user's"


async def test_recorded_answers_replay_the_same_segmentation_without_the_model(scripted, parser, silent_nli,
                                                                                 tmp_path: Path) -> None:
    from agents.errors import InputError
    from agents.model.runner import ModelRunner
    from agents.testing.recorded_backend import RecordedBackend, RecordingBackend
    from agents.testing.scripted_backend import ScriptedBackend

    answers = '{"claims":["The Eiffel Tower is in Paris.","It opened in 1889."]}'
    recording = RecordingBackend(lambda: ScriptedBackend(answers={"segment": answers}))
    items = dialogue_turns(write(tmp_path, DIAHALU))
    prompt = PromptTemplate.load("segment")
    live = await evaluate_segmentation(items, ModelRunner(backend=recording), prompt, parser, silent_nli, "x",
                                       show_progress=False)
    saved = tmp_path / "answers.jsonl"
    recording.save(saved)

    replayed = await evaluate_segmentation(items, ModelRunner(backend=RecordedBackend.load(saved)), prompt, parser,
                                           silent_nli, "x", show_progress=False)
    assert (replayed.claims, replayed.unresolved, replayed.examples) == (live.claims, live.unresolved, live.examples)
    assert live.claims > 0

    other = dialogue_turns(write(tmp_path, {**DIAHALU, "turns": [
        {"speaker": "A1", "role": "user", "text": "And Rome?"},
        {"speaker": "B1", "role": "assistant", "text": "The Colosseum opened in the year 80."}]}))
    with pytest.raises(InputError, match="record again with --save-answers"):
        await evaluate_segmentation(other, ModelRunner(backend=RecordedBackend.load(saved)), prompt, parser,
                                    silent_nli, "x", show_progress=False)


def test_a_recording_topped_up_runs_the_model_only_for_prompts_it_lacks(tmp_path: Path) -> None:
    from agents.model.backend import Prompt
    from agents.testing.recorded_backend import RecordedBackend, RecordingBackend
    from agents.testing.scripted_backend import ScriptedBackend

    old = RecordedBackend(answers={("segment", "known prompt"): '{"claims":["Kept."]}'})
    made: list[ScriptedBackend] = []

    def make() -> ScriptedBackend:
        made.append(ScriptedBackend(answers={"segment": '{"claims":["New."]}'}))
        return made[-1]

    recording = RecordingBackend(make, known=old)
    kept = recording.complete(Prompt(family="segment", static="", variable="known prompt"), {}, 64)
    assert kept.text == '{"claims":["Kept."]}' and not made, "a recorded prompt needs no model"
    new = recording.complete(Prompt(family="segment", static="", variable="changed prompt"), {}, 64)
    assert new.text == '{"claims":["New."]}' and recording.model_calls == 1
    recording.save(tmp_path / "b.jsonl")
    assert RecordedBackend.load(tmp_path / "b.jsonl").answers == {
        ("segment", "known prompt"): '{"claims":["Kept."]}', ("segment", "changed prompt"): '{"claims":["New."]}'}
