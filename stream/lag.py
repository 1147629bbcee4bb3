"""Consumer lag per partition of this worker: the high watermark minus the committed offset.

Read from the Faust consumer on a timer. Only halluwatch's own input topics
count (not table changelogs), named without the configurable prefix so the
label set is the same in every deployment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stream import faust_adapter


async def stage_highwaters(consumer: Any, short_names: dict[str, str]) -> Mapping[Any, int | None]:
    """``{tp: high watermark}`` for the partitions of halluwatch's input topics assigned to ``consumer``."""
    tps = [tp for tp in consumer.assignment() if tp.topic in short_names]
    return await consumer.highwaters(*tps) if tps else {}


async def consumer_lags(
    consumer: Any, short_names: dict[str, str], highwaters: Mapping[Any, int | None]
) -> dict[tuple[str, int], int]:
    """``{(short topic name, partition): lag}`` for the partitions in ``highwaters`` (see stage_highwaters)."""
    lags: dict[tuple[str, int], int] = {}
    for tp in highwaters:
        # Before the first commit the read position stands in for the committed offset.
        committed = faust_adapter.committed_offset(consumer, tp)
        if committed is None:
            committed = await consumer.position(tp)
        high = highwaters.get(tp)
        if high is None or committed is None:
            continue
        lags[(short_names[tp.topic], tp.partition)] = max(0, int(high) - int(committed))
    return lags
