"""Building the worker's retriever and kb-update stage from settings.

The knowledge base is always there (``kb.sqlite3`` in the data directory
unless HALLUWATCH_KB says otherwise); the evidence files given to the worker
are imported into it (again importing the same file adds nothing). The web
retriever joins when HALLUWATCH_WEB_RETRIEVER is on. Both sit behind one
composite with the time-window cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from agents.evidence.cache import RetrievalCache
from agents.evidence.composite import CompositeRetriever
from agents.evidence.kb.documents import ImportReport
from agents.evidence.kb.importer import read_import_file
from agents.evidence.kb.retriever import KnowledgeBaseRetriever
from agents.evidence.kb.store import KnowledgeBase
from agents.evidence.passages import today
from agents.evidence.retriever import Retriever
from agents.evidence.web.retriever import WebConfig, WebRetriever
from agents.model.prompting import PromptTemplate
from agents.model.runner import ModelRunner
from agents.stages.kb_update import KbUpdater
from stream.settings import Settings


def web_config(settings: Settings) -> WebConfig:
    chosen = {
        "url_template": settings.web_url_template,
        "answer_selector": settings.web_answer_selector,
        "link_selector": settings.web_link_selector,
        "date_selector": settings.web_date_selector,
    }
    return dataclasses.replace(
        WebConfig(timeout=settings.web_timeout, browsers=settings.web_browsers, chromium_path=settings.chromium_path,
                  chromedriver_path=settings.chromedriver_path),
        **{k: v for k, v in chosen.items() if v},
    )


@dataclass
class Retrieval:
    """What the retrieve agent uses; ``close()`` stops the browsers and closes the database."""

    retriever: Retriever
    kb: KnowledgeBase
    cache: RetrievalCache | None
    web: WebRetriever | None
    kb_updater: KbUpdater | None
    imported: tuple[ImportReport, ...]

    def close(self) -> None:
        if self.web is not None:
            self.web.close()
        self.kb.close()


def build_retrieval(
    settings: Settings, model: ModelRunner, on_cache_lookup: Callable[[bool], None] | None = None
) -> Retrieval:
    kb = KnowledgeBase(settings.kb_file)
    reports = tuple(kb.add(read_import_file(path), ingested_at=today()) for path in settings.evidence_files)
    retrievers: list[Retriever] = [KnowledgeBaseRetriever(kb)]
    web = WebRetriever(web_config(settings)) if settings.web_retriever else None
    if web is not None:
        retrievers.append(web)
    cache = None
    if settings.retrieval_cache_seconds > 0:
        cache = RetrievalCache(settings.retrieval_cache_seconds, on_lookup=on_cache_lookup)
    # Only fresher passages from another retriever can supersede a KB document: without the web there is none.
    updater = KbUpdater(kb, model, PromptTemplate.load("kb_update")) if settings.kb_update and web else None
    return Retrieval(CompositeRetriever(retrievers, cache), kb, cache, web, updater, reports)
