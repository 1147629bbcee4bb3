from __future__ import annotations

from typing import NamedTuple

from stream.lag import consumer_lags, stage_highwaters


class TP(NamedTuple):
    topic: str
    partition: int


class Consumer:
    """A stand-in for Faust's consumer: assignment, high watermarks, read positions and committed offsets."""

    def __init__(self, committed: dict[TP, int | None], positions: dict[TP, int], highs: dict[TP, int]):
        self._committed_offset = committed  # the attribute stream/faust_adapter.py reads
        self.positions = positions
        self.highs = highs

    def assignment(self) -> set[TP]:
        return set(self.highs)

    async def highwaters(self, *tps: TP) -> dict[TP, int]:
        return {tp: self.highs[tp] for tp in tps}

    async def position(self, tp: TP) -> int:
        return self.positions[tp]


async def test_lag_is_high_watermark_minus_committed_and_falls_back_to_the_position() -> None:
    turns0, turns1, changelog = TP("hw.turns", 0), TP("hw.turns", 1), TP("hw-table-changelog", 0)
    consumer = Consumer(committed={turns0: 7, turns1: None}, positions={turns1: 2},
                        highs={turns0: 10, turns1: 5, changelog: 99})
    short_names = {"hw.turns": "turns"}
    highwaters = await stage_highwaters(consumer, short_names)
    assert set(highwaters) == {turns0, turns1}, "only halluwatch's input topics count"
    assert await consumer_lags(consumer, short_names, highwaters) == {("turns", 0): 3, ("turns", 1): 3}
