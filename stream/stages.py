"""The thin Faust agents: one per stage, each wiring a topic to a plain async stage function.

All per-message care lives in :class:`StageRunner.consume`:

* messages arrive as raw bytes and are decoded and validated here; a message
  that fails goes to ``dlq`` with its original bytes, topic, partition,
  offset and the reason, and the agent carries on;
* an exception inside a stage is caught per message and dead-lettered too.
  Faust would otherwise acknowledge the event and restart the agent, losing
  the turn silently (faust-streaming #189);
* outputs are sent from inside the agent, before its event is acknowledged,
  and Faust flushes its producer before every commit, so an offset is
  committed only after its outputs were handed to the broker: at-least-once.
  (With Faust's default ``stream_publish_on_commit=False`` nothing is
  attached to the event, and a send that fails after aiokafka's own retries
  is only logged, not awaited: a known hole, see
  docs/research/broker-restart/README.md);
* agents run with concurrency 1, so each partition is processed in order and
  no offset is committed past a turn still in flight (faust-streaming #606);
* an :class:`OrderGuard` hands over the messages Faust drops after a
  rebalance (faust-streaming #596) before the message that revealed the hole,
  so none is acknowledged past an unhandled one.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from agents.evidence.passages import today
from agents.evidence.retriever import Retriever
from agents.stages.conversation_memory import ConversationMemory
from agents.stages.justify import justify
from agents.stages.kb_update import KbUpdater
from agents.stages.pipeline import Pipeline
from agents.stages.retrieve import retrieve
from agents.stages.segment import segment
from agents.stages.verify import verify
from agents.text import without_control_characters
from schemas import (
    Alert,
    ClaimSet,
    ContextLine,
    Correction,
    DeadLetter,
    Evidence,
    Label,
    RecordError,
    Role,
    Severity,
    Turn,
    TurnVerdict,
    decode,
    encode,
    ids,
)
from stream.app import Topics
from stream.errors import KeyMismatchError
from stream.metrics import Metrics, NoMetrics
from stream.order_guard import OrderGuard

log = logging.getLogger("halluwatch.stream")
# Which stage's agent consumes each topic (short names, without the prefix).
STAGE_OF_TOPIC = {"turns": "segment", "claimsets": "retrieve", "evidence": "verify", "verdicts": "justify"}
R = TypeVar("R")
Output = tuple[Any, Any]  # (topic, record)
# Keep dead letters themselves under the message size limit.
MAX_ORIGINAL_BYTES = 400_000


def severity_of(verdict: TurnVerdict) -> Severity:
    return Severity.for_confidence(
        max((v.confidence for v in verdict.claim_verdicts if v.label is Label.FALSE), default=0.0)
    )


def make_alert(verdict: TurnVerdict, correction: Correction, now: float) -> Alert:
    claimset = verdict.evidence.claimset
    false_ids = {v.claim_id for v in verdict.claim_verdicts if v.label is Label.FALSE}
    false_claims = tuple(e for e in correction.errors if e.claim_id in false_ids)
    sources = tuple({c.passage_id: c for e in false_claims for c in e.citations}.values())
    return Alert(
        alert_id=ids.alert_id(claimset.conversation_id, claimset.turn_id),
        conversation_id=claimset.conversation_id,
        turn_id=claimset.turn_id,
        bot=claimset.bot,
        severity=severity_of(verdict),
        false_claims=false_claims,
        corrected_text=correction.corrected_text,
        sources=sources,
        latency_seconds=max(0.0, now - claimset.turn_timestamp),
        raised_at=now,
    )


def dead_letter(event: Any, stage: str, exc: BaseException) -> DeadLetter:
    message = event.message
    value = event.value
    original: bytes = value if isinstance(value, bytes) else b"" if value is None else str(value).encode()
    reason = f"{type(exc).__name__}: {exc}"
    if len(original) > MAX_ORIGINAL_BYTES:
        reason += f" (original of {len(original)} bytes cut to {MAX_ORIGINAL_BYTES})"
        original = original[:MAX_ORIGINAL_BYTES]
    key = message.key.decode("utf-8", "replace") if isinstance(message.key, bytes) else message.key
    return DeadLetter(
        dead_letter_id=ids.dead_letter_id(message.topic, message.partition, message.offset),
        source_topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        key=key[:1000] if key else None,
        original_base64=base64.b64encode(original).decode(),
        reason=reason[:2000] or type(exc).__name__,
        error_type=type(exc).__name__,
        stage=stage,
        failed_at=time.time(),
    )


@dataclass
class StageRunner:
    app: Any
    topics: Topics
    pipeline: Pipeline
    retriever: Retriever
    context: Any  # Faust table: conversation_id -> ConversationMemory (its recent lines and older names)
    delivered: Any  # Faust table: correction/alert id -> True, so a replayed turn raises no second alert
    kb_updater: KbUpdater | None = None  # None: no retriever can supersede knowledge-base documents
    metrics: Metrics = field(default_factory=NoMetrics)
    guard: OrderGuard | None = None  # None: trust the consumer to hand over every offset (tests of one stage)

    async def consume(
        self, stream: Any, stage: str, record_type: type[R], handle: Callable[[R, Any], Awaitable[list[Output]]]
    ) -> None:
        async for event in stream.events():
            message = event.message
            backlog: list[Any] = []
            if self.guard is not None:
                try:
                    found = await self.guard.before(message.topic, message.partition, message.offset)
                except Exception as exc:  # noqa: BLE001 - the broker could not give back what Faust dropped
                    await self._dead_letter(event, stage, exc)
                    continue
                if found is None:
                    continue  # handled already: Faust fetched it again
                backlog = found
                if backlog:
                    self.metrics.messages_read_back(stage, len(backlog))
            for missed in [*backlog, event]:
                await self._handle(missed, stage, record_type, handle)
                if self.guard is not None:
                    self.guard.handled(missed.message.topic, missed.message.partition, missed.message.offset)
            if self.guard is not None:
                await self.guard.filled(backlog)  # before this event's ack lets Faust commit past the hole

    async def _handle(
        self, event: Any, stage: str, record_type: type[R], handle: Callable[[R, Any], Awaitable[list[Output]]]
    ) -> None:
        """One message: decode, run the stage, send its outputs; any failure dead-letters this message only."""
        message = event.message
        started = time.perf_counter()
        try:
            record = decode(record_type, event.value)
            outputs = await handle(record, event)
        except RecordError as exc:
            await self._dead_letter(event, stage, exc)
            return
        except Exception as exc:  # noqa: BLE001 - any stage failure dead-letters this message only (faust #189)
            log.exception("%s failed on %s[%s]@%s", stage, message.topic, message.partition, message.offset)
            await self._dead_letter(event, stage, exc)
            return
        key = message.key
        if key is None and isinstance(record, Turn):
            key = record.conversation_id.encode()  # an unkeyed turn: its outputs are keyed as they should be
        for topic, out in outputs:
            await topic.send(key=key, value=encode(out))
        self.metrics.message_done(stage, record, outputs, time.perf_counter() - started, time.time())

    async def _dead_letter(self, event: Any, stage: str, exc: BaseException) -> None:
        m = event.message
        log.warning("dead letter from %s[%s]@%s in %s: %s", m.topic, m.partition, m.offset, stage, exc)
        await self.topics.dlq.send(key=m.key, value=encode(dead_letter(event, stage, exc)))
        self.metrics.dead_letter(stage, type(exc).__name__)

    # --- the four stages -------------------------------------------------------------------

    async def on_turn(self, turn: Turn, event: Any) -> list[Output]:
        key = event.message.key
        if key is not None and key != turn.conversation_id.encode():
            # Keyed by something else (a user id?), a conversation's turns would spread over partitions: out of
            # order, with their context split. Unkeyed turns are taken (simple producers send no key).
            raise KeyMismatchError(
                f"message key {key[:100]!r} is not the turn's conversation_id {turn.conversation_id[:100]!r}:"
                " key each turn by its conversation_id (or send no key)"
            )
        turn = replace(turn, text=without_control_characters(turn.text))
        if turn.timestamp == 0:
            # The chatbot gave no timestamp: the broker's time of the message stands in for it.
            turn = replace(turn, timestamp=float(event.message.timestamp or time.time()))
        key = turn.conversation_id.encode()
        memory = ConversationMemory.from_bytes(self.context.get(key))
        outputs: list[Output] = []
        p = self.pipeline
        if turn.role is Role.ASSISTANT:
            claimset = await segment(turn, memory.lines, p.model, p.prompts.segment, p.parser, p.nli,
                                     memory.people, p.judge)
            outputs.append((self.topics.claimsets, claimset))
        line = ContextLine(role=turn.role, text=turn.text[:2000])
        # Parsing the line that drops out of the window is CPU work: off the loop.
        self.context[key] = (await asyncio.to_thread(memory.remember, line, p.parser)).to_bytes()
        return outputs

    async def on_claimset(self, claimset: ClaimSet, event: Any) -> list[Output]:
        p = self.pipeline
        evidence = await retrieve(claimset, self.retriever, p.model, p.sources_prompt)
        outputs: list[Output] = [(self.topics.evidence, evidence)]
        if self.kb_updater is not None:
            outputs += [(self.topics.kb_updates, u) for u in await self.kb_updater(evidence, today())]
        return outputs

    async def on_evidence(self, evidence: Evidence, event: Any) -> list[Output]:
        p = self.pipeline
        verdict = await verify(evidence, p.model, p.nli, p.prompts.verify, p.calibration, p.sufficiency, p.selective,
                               p.judge)
        return [(self.topics.verdicts, verdict)]

    async def on_verdict(self, verdict: TurnVerdict, event: Any) -> list[Output]:
        p = self.pipeline
        correction = await justify(verdict, p.model, p.prompts.justify, p.max_rounds)
        if correction is None:
            return []
        outputs: list[Output] = []
        if self._first_delivery(correction.correction_id):
            outputs.append((self.topics.corrections, correction))
        if verdict.label is Label.FALSE:
            alert = make_alert(verdict, correction, time.time())
            if self._first_delivery(alert.alert_id):
                outputs.append((self.topics.alerts, alert))
        return outputs

    def _first_delivery(self, record_id: str) -> bool:
        """True the first time an output id is seen; replays and redeliveries get False."""
        key = record_id.encode()
        if self.delivered.get(key):
            return False
        self.delivered[key] = b"1"
        return True


def wire(
    app: Any, topics: Topics, pipeline: Pipeline, retriever: Retriever, partitions: int,
    kb_updater: KbUpdater | None = None, metrics: Metrics | None = None, guard: OrderGuard | None = None,
) -> StageRunner:
    """Create the tables and the four agents on ``app``."""
    runner = StageRunner(
        app=app,
        topics=topics,
        pipeline=pipeline,
        retriever=retriever,
        kb_updater=kb_updater,
        # The app's serializers are raw, so table keys and values are bytes (JSON for the context).
        context=app.Table("conversation-context", key_type=bytes, value_type=bytes, partitions=partitions),
        delivered=app.Table("delivered-outputs", key_type=bytes, value_type=bytes, partitions=partitions),
        metrics=metrics or NoMetrics(),
        guard=guard,
    )

    @app.agent(topics.turns, name="segment", concurrency=1)
    async def segment_agent(stream: Any) -> None:
        await runner.consume(stream, "segment", Turn, runner.on_turn)

    @app.agent(topics.claimsets, name="retrieve", concurrency=1)
    async def retrieve_agent(stream: Any) -> None:
        await runner.consume(stream, "retrieve", ClaimSet, runner.on_claimset)

    @app.agent(topics.evidence, name="verify", concurrency=1)
    async def verify_agent(stream: Any) -> None:
        await runner.consume(stream, "verify", Evidence, runner.on_evidence)

    @app.agent(topics.verdicts, name="justify", concurrency=1)
    async def justify_agent(stream: Any) -> None:
        await runner.consume(stream, "justify", TurnVerdict, runner.on_verdict)

    return runner
