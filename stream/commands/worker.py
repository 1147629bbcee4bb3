"""``halluwatch worker``: the stage agents against a broker (an embedded one when none is configured)."""

from __future__ import annotations

import argparse

from stream.broker import EmbeddedBroker
from stream.settings import Settings
from stream.worker import run_worker


def run_worker_command(args: argparse.Namespace, settings: Settings) -> int:
    if settings.broker_url:
        run_worker(settings, settings.broker_url, args.loglevel)
        return 0
    with EmbeddedBroker() as broker:
        print(f"halluwatch: no broker configured, started an embedded one at {broker.url}", flush=True)
        run_worker(settings, broker.url, args.loglevel)
    return 0
