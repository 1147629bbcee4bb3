"""``halluwatch broker``: the embedded broker in the foreground, for local development."""

from __future__ import annotations

import argparse

from stream.broker import EmbeddedBroker


def run_broker_command(args: argparse.Namespace) -> int:
    broker = EmbeddedBroker(port=args.port).start()
    print(f"halluwatch: embedded broker listening at {broker.url} (memory only); Ctrl-C stops it", flush=True)
    try:
        return broker.run_forever()
    except KeyboardInterrupt:
        return 0
    finally:
        broker.stop()
