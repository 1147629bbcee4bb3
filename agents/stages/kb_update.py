"""Stage 7, kb-update: when fresher evidence contradicts the knowledge base, record the newer fact.

For each claim, a knowledge-base passage and a newer passage from another
retriever (the web) that both bear on the claim are compared by the model,
as in CAAFC's evidence comparison: which is better for judging the claim,
and why (more context, more recent information, other). When the newer one
wins, the knowledge base stores it and marks the old document superseded by
it (never deleting it), and a :class:`~schemas.KbUpdate` is published.

Why a cheap gate before the model: a model call costs seconds on the
embedded model, and most KB/web pairs agree or talk about different
aspects. A pair is compared only when (a) both passages share at least
``RELEVANT`` of the claim's content words and of its words other than names
and numbers (they are about the same subject and say something about what
the claim asserts: a passage on the Eiffel Tower's repainting does not bear on
when it was completed),
(b) both are dated and the other one is strictly newer, and (c) they disagree
on a fact a claim can hinge on: each names a number, or each names a
proper name, that the other does not. That misses contradictions stated
without numbers or names (e.g. "the guidance was reversed"); it lets through
pairs that merely add numbers, which the model then rejects at the cost of
one call. At most ``MAX_COMPARISONS`` calls per claim set bound the cost.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.evidence.kb.documents import NewDocument
from agents.evidence.kb.store import KnowledgeBase
from agents.model.prompting import PromptTemplate
from agents.model.runner import ModelRunner
from agents.text import content_words, coverage, names, numbers, truncate
from schemas import (
    Claim,
    Evidence,
    HalluwatchError,
    KbDocumentRef,
    KbUpdate,
    Passage,
    Preference,
    PreferenceReason,
    ids,
)

log = logging.getLogger("halluwatch.kb_update")

RELEVANT = 0.3
MAX_COMPARISONS = 3
PROMPT_CHARS = 400  # per passage in the prompt: enough for the fact, short enough to keep the call fast


@dataclass(frozen=True)
class ComparisonOutput:
    # The record's own vocabulary. The options are named by age ("old" / "new"), not by position: the
    # small base model tends to pick whichever comes first when they are "evidence_1" / "evidence_2".
    better: Preference
    reason_category: PreferenceReason
    reason: str = field(metadata={"max_length": 120})


def predicate_words(claim: str) -> set[str]:
    """The claim's content words other than names and numbers: what it says about its subject."""
    return {w for w in content_words(claim) if not w[0].isdigit()} - names(claim)


def disagree(old: str, new: str) -> bool:
    """Each text has a number, or each has a name, that the other lacks."""
    n_old, n_new = numbers(old), numbers(new)
    if n_old - n_new and n_new - n_old:
        return True
    m_old, m_new = names(old), names(new)
    return bool(m_old - m_new and m_new - m_old)


@dataclass(frozen=True)
class Candidate:
    claim: Claim
    old: Passage  # from the knowledge base
    new: Passage  # newer, from another retriever


def candidates(evidence: Evidence, kb_name: str = "kb", limit: int = MAX_COMPARISONS) -> list[Candidate]:
    """Pairs worth a model comparison, per claim: its best KB passage against the newest disagreeing one."""
    found: list[Candidate] = []
    for claim in evidence.claimset.claims:
        words = content_words(claim.text)
        said = predicate_words(claim.text)

        def relevant(p: Passage) -> bool:
            text = content_words(p.text)
            return bool(p.published_at) and coverage(words, text) >= RELEVANT and coverage(said, text) >= RELEVANT

        stored = sorted((p for p in evidence.passages if p.retriever == kb_name and relevant(p)), key=lambda p: -p.score)
        fresh = sorted((p for p in evidence.passages if p.retriever != kb_name and relevant(p)),
                       key=lambda p: p.published_at or "", reverse=True)
        for old in stored:
            new = next((n for n in fresh if (n.published_at or "") > (old.published_at or "")
                        and disagree(old.text, n.text)), None)
            if new is not None:
                found.append(Candidate(claim, old, new))
                break
        if len(found) >= limit:
            break
    return found


def _ref(doc_id: int, p: Passage) -> KbDocumentRef:
    return KbDocumentRef(doc_id=doc_id, url=p.url, title=p.title, published_at=p.published_at)


async def compare(candidate: Candidate, model: ModelRunner, prompt: PromptTemplate) -> ComparisonOutput:
    rendered = prompt.render(
        claim=candidate.claim.text,
        old_date=candidate.old.published_at, old_text=truncate(" ".join(candidate.old.text.split()), PROMPT_CHARS),
        new_date=candidate.new.published_at, new_text=truncate(" ".join(candidate.new.text.split()), PROMPT_CHARS),
    )
    return (await model.generate(rendered, ComparisonOutput)).output


async def update_knowledge_base(
    evidence: Evidence, kb: KnowledgeBase, model: ModelRunner, prompt: PromptTemplate, today: str,
    kb_name: str = "kb",
) -> list[KbUpdate]:
    """Compare, and apply where the newer passage wins; the updates to publish on ``kb-updates``."""
    updates: list[KbUpdate] = []
    claimset = evidence.claimset
    for candidate in candidates(evidence, kb_name):
        # A failed comparison or write skips this update only: the evidence itself must still reach verify.
        try:
            old_doc = await asyncio.to_thread(kb.by_passage_id, candidate.old.passage_id)
            if old_doc is None or old_doc.superseded_by is not None:
                continue  # not from this knowledge base, or already replaced (a replayed turn)
            verdict = await compare(candidate, model, prompt)
            if verdict.better is not Preference.NEW:
                continue
            reason = f"{verdict.reason_category.value}: {verdict.reason}"
            new_doc = await asyncio.to_thread(kb.supersede, old_doc.doc_id, NewDocument.from_passage(candidate.new),
                                              reason, today)
        except (HalluwatchError, sqlite3.Error) as exc:
            log.warning("kb-update skipped for claim %s: %s", candidate.claim.claim_id, exc)
            continue
        updates.append(KbUpdate(
            update_id=ids.kb_update_id(old_doc.passage_id, new_doc.passage_id),
            conversation_id=claimset.conversation_id,
            turn_id=claimset.turn_id,
            claim_id=candidate.claim.claim_id,
            claim_text=candidate.claim.text,
            old=_ref(old_doc.doc_id, candidate.old),
            new=_ref(new_doc.doc_id, candidate.new),
            new_retriever=candidate.new.retriever,
            preferred=Preference.NEW,
            reason_category=verdict.reason_category,
            reason=truncate(verdict.reason, 500),
            decided_at=today,
        ))
    return updates


@dataclass
class KbUpdater:
    """The stage bound to its knowledge base, model and prompt, as the stream wires it."""

    kb: KnowledgeBase
    model: ModelRunner
    prompt: PromptTemplate
    kb_name: str = "kb"

    async def __call__(self, evidence: Evidence, today: str) -> Sequence[KbUpdate]:
        return await update_knowledge_base(evidence, self.kb, self.model, self.prompt, today, self.kb_name)
