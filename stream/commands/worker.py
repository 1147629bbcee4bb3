"""``halluwatch worker``: the stage agents against a broker (an embedded one when none is configured)."""

from __future__ import annotations

import argparse
import dataclasses

from agents.model.nli import NliRunner
from agents.model.runner import ModelRunner
from agents.scoring.calibration import VerifyCalibration
from agents.stages.pipeline import Pipeline
from agents.testing.stream_model import SilentPairClassifier, stream_model_backend
from stream.broker import EmbeddedBroker
from stream.build import build_pipeline
from stream.settings import Settings
from stream.worker import run_worker


def scripted_pipeline(settings: Settings) -> Pipeline:
    """The stages on a scripted model (and a silent cross-encoder) that cost nothing: for measuring the stream
    itself, never for verdicts.

    The script's labels are the verdicts (no fitted calibration), so its share of false claims reaches the
    alerts topic and the stream carries corrections and alerts as it does in production.
    """
    pipeline = build_pipeline(settings, model=ModelRunner(settings.model, backend=stream_model_backend()))
    return dataclasses.replace(pipeline, calibration=VerifyCalibration.identity(),
                               nli=NliRunner(SilentPairClassifier()))


def run_worker_command(args: argparse.Namespace, settings: Settings) -> int:
    pipeline = scripted_pipeline(settings) if args.scripted_model else None
    if settings.broker_url:
        run_worker(settings, settings.broker_url, args.loglevel, pipeline)
        return 0
    with EmbeddedBroker() as broker:
        print(f"halluwatch: no broker configured, started an embedded one at {broker.url}", flush=True)
        # Restarted in place after an outage, the worker starts a new embedded broker: stop this one first.
        run_worker(settings, broker.url, args.loglevel, pipeline, before_restart=broker.kill)
    return 0
