"""The source-hints measurement: what a knowledge-base search finds of each claim's own evidence."""

import orjson

from agents.evaluation.datasets import read_averitec
from agents.evaluation.source_hints import RetrievalScore, evaluate_source_hints, knowledge_base_rows, score
from agents.model.prompting import PromptTemplate


def test_score_counts_own_documents_in_the_top_k() -> None:
    rankings = [["a", "x", "b"], ["y", "z", "c"], []]
    own = [{"a", "b"}, {"c"}, {"d"}]
    assert score(rankings, own, 2) == RetrievalScore(found=round(1 / 3, 3), precision=round(0.5 / 3, 3),
                                                     mrr=round(1 / 3, 3))
    assert score(rankings, own, 3).found == round(2 / 3, 3)


def row(claim: str, *evidence: tuple[str, str, str]) -> dict:
    return {"id": claim[:10], "claim": claim, "claim_date": "1-8-2020", "label": "true",
            "evidence": [{"question": q, "answer": a, "source_url": url} for q, a, url in evidence]}


async def test_a_hint_naming_a_site_moves_its_documents_up(tmp_path, scripted) -> None:
    rows = [
        row("Apollo 11 landed on the Moon in 1969.",
            ("When did Apollo 11 land?", "In July 1969.", "https://archive.spaceflight.example/apollo11")),
        row("The Apollo 11 crew had three astronauts.",
            ("How many astronauts flew Apollo 11 to the Moon, landed in 1969?", "Three astronauts on the Moon mission.",
             "https://www.magazine.example/apollo")),
    ]
    path = tmp_path / "averitec.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows))
    cases = read_averitec(path)
    assert len(knowledge_base_rows(cases)) == 2
    runner, backend = scripted({"sources": '{"sources":[{"kind":"archive","where":"Spaceflight","reason":"records"}]}'})
    report = await evaluate_source_hints(cases, runner, PromptTemplate.load("sources"), progress=False)
    assert (report.claims, report.documents, report.claims_with_hints) == (2, 2, 2)
    assert len(backend.prompts) == 2  # one sources call per claim
    assert report.with_hints.found == report.without_hints.found == 1.0
    # The hint matches the archive's site: its document scores higher for both claims (here not enough to
    # overtake the magazine's, which shares more words with the first claim).
    assert report.scores_changed == 2 and report.rankings_changed == 0
    assert report.with_hints == report.without_hints

    runner, _ = scripted({"sources": '{"sources":[{"kind":"newspaper","where":"Daily Planet","reason":"x"}]}'})
    unmatched = await evaluate_source_hints(cases, runner, PromptTemplate.load("sources"), progress=False)
    assert unmatched.claims_with_hints == 2 and unmatched.scores_changed == 0
