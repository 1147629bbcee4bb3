"""kb-update logic: the cheap gate, and applying the model's comparison to the knowledge base."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.evidence.kb.store import KnowledgeBase
from agents.evidence.passages import assemble_evidence
from agents.model.prompting import PromptTemplate
from agents.stages.kb_update import candidates, disagree, update_knowledge_base
from schemas import Claim, ClaimSet, Passage, Preference, PreferenceReason, ids

TODAY = "2026-12-03"
CLAIM = Claim(claim_id="c1", index=0, text="Mount Everest is 8,848 metres high.")
OLD_TEXT = "Mount Everest is 8,848 metres high according to the 1955 survey."
NEW_TEXT = "In December 2020 Nepal and China announced Mount Everest is 8,848.86 metres high."


def passage(text: str, url: str, published: str | None, retriever: str, score: float = 0.5) -> Passage:
    return Passage(passage_id=ids.passage_id(url, text), text=text, url=url, title="t", published_at=published,
                   retrieved_at=TODAY, retriever=retriever, score=score)


def evidence_with(*passages: Passage):
    claimset = ClaimSet(claimset_id="cs", conversation_id="conv", turn_id="T1", bot="", turn_text=CLAIM.text,
                        turn_timestamp=0, claim_date=None, context=(), claims=(CLAIM,), skipped=())
    return assemble_evidence(claimset, passages)


@pytest.fixture
def kb(tmp_path: Path):
    base = KnowledgeBase(tmp_path / "kb.sqlite3")
    base.add([(1, {"text": OLD_TEXT, "url": "https://atlas.example", "published_at": "2005-03-01"})], ingested_at="2010-01-01")
    yield base
    base.close()


def test_disagree_needs_a_number_or_name_on_each_side() -> None:
    assert disagree("Everest is 8,848 m.", "Everest is 8,848.86 m.")
    assert not disagree("Everest is 8,848 m.", "Everest is 8,848 m, the highest peak, as measured in 2020.")
    assert not disagree("Everest is 8,848 m.", "Everest, at 8,848 m, is the highest peak.")
    assert disagree("The capital is in Bonn, said the paper.", "The capital is in Berlin, said the paper.")


def test_gate_pairs_a_kb_passage_with_a_newer_disagreeing_one_only() -> None:
    old = passage(OLD_TEXT, "https://atlas.example", "2005-03-01", "kb")
    new = passage(NEW_TEXT, "https://gov.example", "2020-12-08", "web")
    older_web = passage("Mount Everest is 8,840 metres high, said the 1850 survey.", "https://old.example", "1999-01-01", "web")
    unrelated = passage("Paris hosts 30 million tourists a year.", "https://paris.example", "2024-01-01", "web")
    undated = passage("Mount Everest is 8,850 metres high.", "https://undated.example", None, "web")
    same_subject = passage("Mount Everest was climbed by 800 people in 2019.", "https://climb.example", "2020-01-01", "web")
    found = candidates(evidence_with(old, new, older_web, unrelated, undated, same_subject))
    assert [(c.old.url, c.new.url) for c in found] == [("https://atlas.example", "https://gov.example")]
    assert candidates(evidence_with(old, older_web, unrelated, undated)) == []


async def test_newer_evidence_that_wins_supersedes_the_kb_document(kb, scripted) -> None:
    runner, backend = scripted({"kb_update": '{"better":"new","reason_category":"more_recent",'
                                             '"reason":"2 gives the 2020 height."}'})
    old = kb.find("https://atlas.example")[0].passage(TODAY, 0.8)
    new = passage(NEW_TEXT, "https://gov.example", "2020-12-08", "web")
    updates = await update_knowledge_base(evidence_with(old, new), kb, runner, PromptTemplate.load("kb_update"), TODAY)
    assert len(updates) == 1
    update = updates[0]
    assert (update.old.doc_id, update.new.doc_id, update.new.url, update.new.published_at) == (1, 2, "https://gov.example", "2020-12-08")
    assert (update.preferred, update.reason_category, update.reason) == (Preference.NEW, PreferenceReason.MORE_RECENT, "2 gives the 2020 height.")
    assert (update.conversation_id, update.turn_id, update.claim_id, update.decided_at) == ("conv", "T1", "c1", TODAY)
    assert kb.get(1).superseded_by == 2 and kb.get(1).supersede_reason == "more_recent: 2 gives the 2020 height."
    # The prompt names the KB passage as the older one and the web passage as the newer, with their dates.
    assert "Older (2005-03-01): Mount Everest is 8,848" in backend.prompts[0].variable
    assert "Newer (2020-12-08): In December 2020" in backend.prompts[0].variable
    # Replaying the same evidence changes nothing: the old document is already superseded.
    assert await update_knowledge_base(evidence_with(old, new), kb, runner, PromptTemplate.load("kb_update"), TODAY) == []
    assert len(backend.prompts) == 1


@pytest.mark.parametrize("better", ["old", "tie"])
async def test_kb_document_that_wins_or_ties_stays(kb, scripted, better: str) -> None:
    runner, _ = scripted({"kb_update": f'{{"better":"{better}","reason_category":"more_context","reason":"r"}}'})
    old = kb.find("https://atlas.example")[0].passage(TODAY, 0.8)
    new = passage(NEW_TEXT, "https://gov.example", "2020-12-08", "web")
    assert await update_knowledge_base(evidence_with(old, new), kb, runner, PromptTemplate.load("kb_update"), TODAY) == []
    assert kb.get(1).superseded_by is None and kb.stats().documents == 1
