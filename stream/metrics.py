"""Prometheus metrics of a halluwatch worker, built once from a registry and passed down.

Names follow Prometheus conventions: base units (seconds), ``_total`` for
counters, and label sets bounded by code, never by the data: stages, labels,
severities, error class names and topic names come from halluwatch itself;
the chatbot's ``bot`` name is the one label a user controls, so only the first
:data:`MAX_BOTS` distinct bots get their own series and the rest share
``other``. Conversation and turn ids are never labels.

:class:`PipelineMetrics` is what the stage runner records into;
:class:`NoMetrics` has the same methods and records nothing (metrics off, for
the overhead benchmark).
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from agents.evidence.passages import EvidenceKind
from schemas import Alert, ClaimSet, Correction, Evidence, StageTiming, Turn, TurnVerdict

NAMESPACE = "halluwatch"
MAX_BOTS = 32
OTHER = "other"
# The real model takes 0.1 s to a minute per stage; a large model on CPU much longer.
STAGE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
END_TO_END_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
FINGRACT_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 7)


class Metrics(Protocol):
    """What the stream records; both implementations below satisfy it."""

    def message_done(self, stage: str, record: object, outputs: Sequence[tuple[Any, object]], seconds: float, now: float) -> None: ...
    def dead_letter(self, stage: str, error_type: str) -> None: ...
    def retrieval_cache(self, hit: bool) -> None: ...
    def set_consumer_lag(self, lags: Mapping[tuple[str, int], int]) -> None: ...
    def messages_read_back(self, stage: str, count: int) -> None: ...
    def partition_refetched(self, stage: str) -> None: ...
    def broker_lost(self) -> None: ...
    def waiting_for_broker(self) -> None: ...


class BoundedValues:
    """Keeps a user-controlled label value set bounded: the first ``limit`` values, then ``other``."""

    def __init__(self, limit: int):
        self.limit = limit
        self._seen: set[str] = set()

    def __call__(self, value: str) -> str:
        value = value or "unknown"
        if value in self._seen:
            return value
        if len(self._seen) < self.limit:
            self._seen.add(value)
            return value
        return OTHER


class PipelineMetrics:
    """Every series a worker exports, registered on ``registry`` (a fresh one per test)."""

    def __init__(self, registry: CollectorRegistry, max_bots: int = MAX_BOTS):
        self.registry = registry
        self._bot = BoundedValues(max_bots)
        ns = NAMESPACE
        r = registry
        self.stage_seconds = Histogram(
            "stage_duration_seconds", "Wall time to process one message in a stage, decode to outputs sent (dead letters are counted apart)",
            ["stage"], namespace=ns, registry=r, buckets=STAGE_BUCKETS,
        )
        self.end_to_end_seconds = Histogram(
            "end_to_end_latency_seconds", "From the turn's own timestamp to its verdict, correction or alert",
            ["output"], namespace=ns, registry=r, buckets=END_TO_END_BUCKETS,
        )
        self.model_seconds = Counter(
            "model_seconds_total", "Time spent in the model, by stage and phase (prompt evaluation or generation)",
            ["stage", "phase"], namespace=ns, registry=r,
        )
        self.encoder_seconds = Counter(
            "encoder_seconds_total", "Time the cross-encoder spent reading claims beside their turn and each other (segment) or"
            " their evidence (verify), by stage",
            ["stage"], namespace=ns, registry=r,
        )
        self.model_tokens = Counter(
            "model_tokens_total", "Tokens the model evaluated (prompt, prefix reuse excluded) or generated",
            ["stage", "phase"], namespace=ns, registry=r,
        )
        self.turns = Counter("turns_total", "Dialogue turns consumed", ["role"], namespace=ns, registry=r)
        self.claims = Counter("claims_total", "Atomic claims extracted from assistant turns", namespace=ns, registry=r)
        self.skipped = Counter(
            "skipped_spans_total", "Parts of assistant turns with no checkable claim, by reason",
            ["reason"], namespace=ns, registry=r,
        )
        self.passages = Counter("evidence_passages_total", "Evidence passages retrieved", namespace=ns, registry=r)
        self.turn_verdicts = Counter(
            "turn_verdicts_total", "Assistant-turn verdicts by label (CAAFC Algorithm 1) and bot",
            ["label", "bot"], namespace=ns, registry=r,
        )
        self.claim_verdicts = Counter(
            "claim_verdicts_total", "Claim verdicts by label and what they were judged against (grounded:"
            " the turn's own documents, retrieved, closed_book)", ["label", "evidence"], namespace=ns, registry=r,
        )
        self.abstentions = Counter(
            "abstentions_total", "Claim verdicts where the verifier abstained (insufficient context, low confidence)",
            namespace=ns, registry=r,
        )
        self.sufficiency = Counter(
            "claim_sufficiency_total", "Claims by whether their evidence was judged sufficient to settle them",
            ["label"], namespace=ns, registry=r,
        )
        self.alerts = Counter(
            "alerts_total", "Hallucination alerts raised, by severity and bot", ["severity", "bot"],
            namespace=ns, registry=r,
        )
        self.corrections = Counter(
            "corrections_total", "Corrections published, by turn label and whether FinGrAct accepted them",
            ["label", "acceptable"], namespace=ns, registry=r,
        )
        self.fingract = Histogram(
            "correction_actionability_score", "FinGrAct actionability score of each correction (0-7, accepted at >= 4)",
            namespace=ns, registry=r, buckets=FINGRACT_BUCKETS,
        )
        self.dead_letters = Counter(
            "dead_letters_total", "Messages sent to the dead-letter topic, by stage and error type",
            ["stage", "reason"], namespace=ns, registry=r,
        )
        self.cache_requests = Counter(
            "retrieval_cache_requests_total", "Retrieval cache look-ups, by result (hit or miss)",
            ["result"], namespace=ns, registry=r,
        )
        self.consumer_lag = Gauge(
            "consumer_lag_messages", "Messages not yet committed by this worker: high watermark minus committed offset",
            ["topic", "partition"], namespace=ns, registry=r,
        )
        self.read_back = Counter(
            "consumer_messages_read_back_total",
            "Messages the consumer skipped (faust-streaming #596) that the worker read back from the broker and handled",
            ["stage"], namespace=ns, registry=r,
        )
        self.refetches = Counter(
            "consumer_partition_refetches_total",
            "Partitions with messages waiting and no progress for a minute, fetched again from the next expected offset",
            ["stage"], namespace=ns, registry=r,
        )
        self.broker_up = Gauge(
            "broker_up", "1 while a bootstrap address of the broker accepts connections, 0 during an outage",
            namespace=ns, registry=r,
        )
        self.broker_up.set(1)
        self.broker_outages = Counter(
            "broker_outages_total", "Times the worker lost every connection to the broker (and restarted in place)",
            namespace=ns, registry=r,
        )
        self.build = Info("build", "halluwatch version, model and runtime of this worker", namespace=ns, registry=r)
        self._lag_keys: set[tuple[str, str]] = set()

    # --- called by the stream -----------------------------------------------------------------

    def set_build_info(self, version: str, model: str, gpu_layers: int) -> None:
        self.build.info({
            "version": version, "model": model, "gpu_layers": str(gpu_layers), "python": platform.python_version(),
        })

    def message_done(
        self, stage: str, record: object, outputs: Sequence[tuple[Any, object]], seconds: float, now: float
    ) -> None:
        """One message of ``stage`` was processed into ``outputs`` in ``seconds`` (wall clock)."""
        self.stage_seconds.labels(stage).observe(seconds)
        if isinstance(record, Turn):
            self.turns.labels(record.role.value).inc()
        for _, out in outputs:
            if isinstance(out, ClaimSet):
                self._claimset(out)
            elif isinstance(out, Evidence):
                # The claim set picked up its sources timing in this stage too.
                before = len(record.timings) if isinstance(record, ClaimSet) else 0
                self._timings(out.claimset.timings[before:] + out.timings)
                self.passages.inc(len(out.passages))
            elif isinstance(out, TurnVerdict):
                self._verdict(out, now)
            elif isinstance(out, Correction):
                self._correction(out, record, now)
            elif isinstance(out, Alert):
                self.alerts.labels(out.severity.value, self._bot(out.bot)).inc()
                self.end_to_end_seconds.labels("alert").observe(out.latency_seconds)

    def dead_letter(self, stage: str, error_type: str) -> None:
        # error_type is an exception class name: a set fixed by the code, so it is a safe label.
        self.dead_letters.labels(stage, error_type).inc()

    def retrieval_cache(self, hit: bool) -> None:
        """For the retrieval cache to call on every look-up."""
        self.cache_requests.labels("hit" if hit else "miss").inc()

    def set_consumer_lag(self, lags: Mapping[tuple[str, int], int]) -> None:
        """Replace the lag series with ``{(topic, partition): lag}``; partitions no longer assigned disappear."""
        keys = {(topic, str(partition)) for topic, partition in lags}
        for stale in self._lag_keys - keys:
            self.consumer_lag.remove(*stale)
        for (topic, partition), lag in lags.items():
            self.consumer_lag.labels(topic, str(partition)).set(lag)
        self._lag_keys = keys

    def messages_read_back(self, stage: str, count: int) -> None:
        self.read_back.labels(stage).inc(count)

    def partition_refetched(self, stage: str) -> None:
        self.refetches.labels(stage).inc()

    def broker_lost(self) -> None:
        """An outage starts (the worker then restarts in place, so it never records the broker's return)."""
        self.broker_up.set(0)
        self.broker_outages.inc()

    def waiting_for_broker(self) -> None:
        """A worker (re)started while the broker is away: down, but the outage is not a new one to count."""
        self.broker_up.set(0)

    def count_earlier_outages(self, count: int) -> None:
        """Outages before this process started: the worker restarts in place on each (stream.broker_outage)."""
        self.broker_outages.inc(count)

    # --- per output record --------------------------------------------------------------------

    def _timings(self, timings: Iterable[StageTiming]) -> None:
        for t in timings:
            if t.encoder_seconds > 0:
                self.encoder_seconds.labels(t.stage).inc(t.encoder_seconds)
            if t.model_seconds <= 0:
                continue  # a stage that did not call the model (no claims) has no model time to report
            self.model_seconds.labels(t.stage, "prompt").inc(t.prompt_seconds)
            self.model_seconds.labels(t.stage, "generate").inc(max(0.0, t.model_seconds - t.prompt_seconds))
            self.model_tokens.labels(t.stage, "prompt").inc(t.prompt_tokens)
            self.model_tokens.labels(t.stage, "generate").inc(t.generated_tokens)

    def _claimset(self, claimset: ClaimSet) -> None:
        self.claims.inc(len(claimset.claims))
        for span in claimset.skipped:
            self.skipped.labels(span.reason.value).inc()
        self._timings(claimset.timings)

    def _verdict(self, verdict: TurnVerdict, now: float) -> None:
        claimset = verdict.evidence.claimset
        self.turn_verdicts.labels(verdict.label.value, self._bot(claimset.bot)).inc()
        evidence = EvidenceKind.of(verdict.evidence.passages)
        for v in verdict.claim_verdicts:
            self.claim_verdicts.labels(v.label.value, evidence.value).inc()
            if v.abstained:
                self.abstentions.inc()
            if v.sufficiency is not None:
                self.sufficiency.labels(v.sufficiency.label.value).inc()
        self._timings(verdict.timings)
        self._latency("verdict", claimset.turn_timestamp, now)

    def _correction(self, correction: Correction, record: object, now: float) -> None:
        self.corrections.labels(correction.label.value, str(correction.score.acceptable).lower()).inc()
        self.fingract.observe(correction.score.total)
        self._timings(correction.timings)
        if isinstance(record, TurnVerdict):
            self._latency("correction", record.evidence.claimset.turn_timestamp, now)

    def _latency(self, output: str, turn_timestamp: float, now: float) -> None:
        if turn_timestamp > 0:  # clocks of bot and worker may disagree a little: never observe below zero
            self.end_to_end_seconds.labels(output).observe(max(0.0, now - turn_timestamp))


class NoMetrics:
    """Metrics off: the same calls, nothing recorded, nothing exported."""

    def set_build_info(self, version: str, model: str, gpu_layers: int) -> None:
        pass

    def message_done(self, stage: str, record: object, outputs: Sequence[tuple[Any, object]], seconds: float, now: float) -> None:
        pass

    def dead_letter(self, stage: str, error_type: str) -> None:
        pass

    def retrieval_cache(self, hit: bool) -> None:
        pass

    def set_consumer_lag(self, lags: Mapping[tuple[str, int], int]) -> None:
        pass

    def messages_read_back(self, stage: str, count: int) -> None:
        pass

    def partition_refetched(self, stage: str) -> None:
        pass

    def broker_lost(self) -> None:
        pass

    def waiting_for_broker(self) -> None:
        pass


def metric_names(registry: CollectorRegistry) -> set[str]:
    """Every sample name the registry can export (``_bucket``, ``_total`` ... included), for checks."""
    names: set[str] = set()
    for family in registry.collect():
        names.add(family.name)
        if family.type == "counter":
            names.update({family.name + "_total", family.name + "_created"})
        elif family.type == "histogram":
            names.update(family.name + s for s in ("_bucket", "_count", "_sum", "_created"))
        elif family.type == "info":
            names.add(family.name + "_info")
    return names
