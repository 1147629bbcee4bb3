"""One settings object, built once from ``HALLUWATCH_*`` environment variables and CLI flags.

Nothing else in halluwatch reads the environment: the CLI builds
:class:`Settings` with :meth:`Settings.from_env`, applies its flags with
:meth:`Settings.override`, and passes the result down.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.errors import InputError
from agents.model.config import ModelConfig

PREFIX = "HALLUWATCH_"


def default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "halluwatch"


@dataclass(frozen=True)
class Settings:
    model: ModelConfig = field(default_factory=ModelConfig)
    calibration_path: Path | None = None  # None: the calibration shipped with halluwatch (for the judge, if any)
    # A larger model that reads each claim beside its retrieved evidence (agents.model.judge.JUDGES); None: off.
    judge: str | None = None
    selective_path: Path | None = None  # selective-verdict calibration; None: the shipped one
    sufficiency_path: Path | None = None  # the sufficiency rater; None: the shipped one
    # When a verdict abstains: a fixed threshold on its estimated chance of being right (0 never abstains),
    # or the threshold that meets a target coverage or alert precision on the calibration's held-out data.
    abstain_threshold: float | None = None
    abstain_coverage: float | None = None
    abstain_precision: float | None = None
    max_rounds: int = 2  # justification revision rounds after the first
    data_dir: Path = field(default_factory=default_data_dir)
    broker_url: str | None = None  # None: start the embedded broker
    topic_prefix: str = "halluwatch."
    partitions: int = 4
    worker_concurrency: int = 1
    metrics_port: int = 9464  # the worker's HTTP port: /metrics, /alerts, /api/alerts
    metrics_host: str = "127.0.0.1"  # 0.0.0.0 in a container, so Prometheus can scrape it
    metrics_enabled: bool = True  # off: nothing recorded and no /metrics (the overhead benchmark)
    session_timeout: float = 10.0  # seconds before the group gives a dead worker's partitions to another
    evidence_files: tuple[Path, ...] = ()  # JSONL passages the worker imports into its knowledge base
    # Retrieval: the knowledge base (always), the web retriever (when switched on), the cache and kb-update.
    kb_path: Path | None = None  # None: kb.sqlite3 in data_dir
    web_retriever: bool = False
    web_url_template: str | None = None  # None: Google's AI mode (agents.evidence.web.retriever.WebConfig)
    web_answer_selector: str | None = None
    web_link_selector: str | None = None
    web_date_selector: str | None = None
    web_timeout: float = 20.0  # seconds per web query
    web_browsers: int = 2  # Chromium sessions kept and reused
    chromium_path: Path = Path("/usr/bin/chromium")
    chromedriver_path: Path = Path("/usr/bin/chromedriver")
    retrieval_cache_seconds: float = 600.0  # identical requests within this window come from the cache; 0 = off
    kb_update: bool = True  # let fresher web evidence supersede knowledge-base documents
    # The sources stage (a model call per claim set naming primary sources). None: only with the web retriever,
    # whose queries it directs; over 200 AVeriTeC claims it changed no knowledge-base result
    # (docs/results/eval-source-hints.txt), so a worker that reads only its knowledge base skips it.
    find_sources: bool | None = None

    @property
    def finds_sources(self) -> bool:
        return self.web_retriever if self.find_sources is None else self.find_sources

    @property
    def kb_file(self) -> Path:
        return self.kb_path or self.data_dir / "kb.sqlite3"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name, (path, parse) in _ENV_FIELDS.items():
            raw = env.get(PREFIX + name)
            if raw is None or raw == "":
                continue
            try:
                values[path] = parse(raw)
            except ValueError:
                raise InputError(f"{PREFIX}{name}={raw!r} is not valid: expected {parse.__name__}") from None
        return cls().override(**values)

    def override(self, **values: Any) -> Settings:
        """A copy with the given fields replaced; ``None`` means "not given". Model fields as ``model.x``."""
        model_changes = {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("model.") and v is not None}
        top_changes = {k: v for k, v in values.items() if not k.startswith("model.") and v is not None}
        model = dataclasses.replace(self.model, **model_changes) if model_changes else self.model
        return dataclasses.replace(self, model=model, **top_changes)


def _path(raw: str) -> Path:
    return Path(raw).expanduser()


def _paths(raw: str) -> tuple[Path, ...]:
    return tuple(Path(p).expanduser() for p in raw.split(",") if p.strip())


def _bool(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


_path.__name__ = "a path"
_paths.__name__ = "comma-separated paths"
_bool.__name__ = "true or false"

_ENV_FIELDS: dict[str, tuple[str, Any]] = {
    "MODEL_PATH": ("model.model_path", _path),
    "N_CTX": ("model.n_ctx", int),
    "N_THREADS": ("model.n_threads", int),
    "N_GPU_LAYERS": ("model.n_gpu_layers", int),
    "ENCODER_THREADS": ("model.encoder_threads", int),
    "TEMPERATURE": ("model.temperature", float),
    "SEED": ("model.seed", int),
    "PREFIX_REUSE": ("model.prefix_reuse", _bool),
    "CACHE_DIR": ("model.cache_dir", _path),
    "CALIBRATION": ("calibration_path", _path),
    "JUDGE": ("judge", str),
    "SELECTIVE_CALIBRATION": ("selective_path", _path),
    "SUFFICIENCY_RATER": ("sufficiency_path", _path),
    "ABSTAIN_THRESHOLD": ("abstain_threshold", float),
    "ABSTAIN_COVERAGE": ("abstain_coverage", float),
    "ABSTAIN_PRECISION": ("abstain_precision", float),
    "MAX_ROUNDS": ("max_rounds", int),
    "DATA_DIR": ("data_dir", _path),
    "BROKER": ("broker_url", str),
    "TOPIC_PREFIX": ("topic_prefix", str),
    "PARTITIONS": ("partitions", int),
    "WORKER_CONCURRENCY": ("worker_concurrency", int),
    "METRICS_PORT": ("metrics_port", int),
    "METRICS_HOST": ("metrics_host", str),
    "METRICS": ("metrics_enabled", _bool),
    "SESSION_TIMEOUT": ("session_timeout", float),
    "EVIDENCE": ("evidence_files", _paths),
    "KB": ("kb_path", _path),
    "WEB_RETRIEVER": ("web_retriever", _bool),
    "WEB_URL_TEMPLATE": ("web_url_template", str),
    "WEB_ANSWER_SELECTOR": ("web_answer_selector", str),
    "WEB_LINK_SELECTOR": ("web_link_selector", str),
    "WEB_DATE_SELECTOR": ("web_date_selector", str),
    "WEB_TIMEOUT": ("web_timeout", float),
    "WEB_BROWSERS": ("web_browsers", int),
    "CHROMIUM": ("chromium_path", _path),
    "CHROMEDRIVER": ("chromedriver_path", _path),
    "RETRIEVAL_CACHE_SECONDS": ("retrieval_cache_seconds", float),
    "KB_UPDATE": ("kb_update", _bool),
    "FIND_SOURCES": ("find_sources", _bool),
}
