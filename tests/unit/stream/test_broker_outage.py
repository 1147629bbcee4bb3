"""A worker that lost its broker waits for it, says so, and keeps its outage count across the restart.

The restart itself (an exec of the worker's command line) and the metrics a
waiting worker serves are tested end to end in
tests/integration/test_broker_restart.py.
"""

import logging

import pytest

from stream.broker_outage import OUTAGES_VARIABLE, WAITING_NOTE_EVERY, outages_seen, wait_for_broker


def test_the_outage_count_comes_from_the_restarting_worker() -> None:
    assert outages_seen({}) == 0
    assert outages_seen({OUTAGES_VARIABLE: "3"}) == 3
    assert outages_seen({OUTAGES_VARIABLE: "three"}) == 0


def scripted_probe(answers: list[str | None], now: list[float], step: float):  # type: ignore[no-untyped-def]
    """A probe that answers ``answers`` in turn, each probe ``step`` seconds after the one before."""
    replies = iter(answers)

    async def probe(addresses):  # type: ignore[no-untyped-def]
        now[0] += step
        return next(replies)

    return probe


async def test_a_reachable_broker_is_not_waited_for(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    with caplog.at_level(logging.WARNING, "halluwatch.stream"):
        waited = await wait_for_broker([("127.0.0.1", 9092)], interval=0, probe=scripted_probe([None], now, 1.0),
                                       clock=lambda: now[0])
    assert waited == 0.0
    assert caplog.records == []


async def test_the_worker_waits_until_the_broker_answers_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    answers: list[str | None] = ["connection refused"] * 4 + [None]
    with caplog.at_level(logging.WARNING, "halluwatch.stream"):
        waited = await wait_for_broker([("127.0.0.1", 9092)], interval=0, probe=scripted_probe(answers, now, 1.0),
                                       clock=lambda: now[0])
    assert waited == 4.0
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert "unreachable (connection refused): waiting for it" in messages[0]
    assert "after 4.0s of waiting: starting the worker" in messages[1]


async def test_a_long_wait_is_recalled_now_and_then_not_every_probe(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    probes = int(2.5 * WAITING_NOTE_EVERY)  # one probe a second for two and a half reminder periods
    answers: list[str | None] = ["timed out"] * probes + [None]
    with caplog.at_level(logging.WARNING, "halluwatch.stream"):
        await wait_for_broker([("kafka", 9092)], interval=0, probe=scripted_probe(answers, now, 1.0),
                              clock=lambda: now[0])
    reminders = [r.getMessage() for r in caplog.records if "still waiting" in r.getMessage()]
    assert len(reminders) == 2, reminders
