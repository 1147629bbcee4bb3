"""What a worker keeps of a conversation: the last lines whole, and the people named in the lines before them."""

import orjson

from agents.stages.conversation_memory import REMEMBERED_PEOPLE, REMEMBERED_TURNS, ConversationMemory, add_people
from schemas import ContextLine, Role


def line(text: str, role: Role = Role.USER) -> ContextLine:
    return ContextLine(role=role, text=text)


def test_the_last_lines_are_kept_whole_and_the_people_of_older_ones_by_name(parser) -> None:
    memory = ConversationMemory()
    said = ["Tell me about Albert Einstein.", "He was born in Ulm.", *[f"Line {n}." for n in range(REMEMBERED_TURNS)]]
    for text in said:
        memory = memory.remember(line(text), parser)
    assert [c.text for c in memory.lines] == said[-REMEMBERED_TURNS:]
    assert memory.people == ("Albert Einstein",)


def test_a_person_named_again_moves_to_the_end_and_the_oldest_are_forgotten() -> None:
    assert add_people(("Ada Lovelace", "Alan Turing"), ["Ada Lovelace"]) == ("Alan Turing", "Ada Lovelace")
    many = add_people((), [f"Person {n}" for n in range(REMEMBERED_PEOPLE + 3)])
    assert len(many) == REMEMBERED_PEOPLE and many[-1] == f"Person {REMEMBERED_PEOPLE + 2}"


def test_memory_round_trips_and_reads_the_bare_list_older_workers_stored() -> None:
    memory = ConversationMemory(lines=(line("Hi"), line("Hello", Role.ASSISTANT)), people=("Marie Curie",))
    assert ConversationMemory.from_bytes(memory.to_bytes()) == memory
    old = orjson.dumps([{"role": "user", "text": "Hi"}])
    assert ConversationMemory.from_bytes(old) == ConversationMemory(lines=(line("Hi"),))
    assert ConversationMemory.from_bytes(None) == ConversationMemory()
