"""The ``halluwatch`` command line.

Errors a user can fix (a missing file, bad input, a missing model) are
:class:`~schemas.HalluwatchError` subclasses; they print one line saying what
to do and exit with code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from schemas import HalluwatchError
from stream.settings import Settings

EXIT_USAGE = 2


def _model_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model (flags override HALLUWATCH_* variables)")
    group.add_argument("--model-path", type=Path, dest="model.model_path", help="GGUF file (default: embedded Gemma 3 270M)")
    group.add_argument("--n-ctx", type=int, dest="model.n_ctx", help="context size in tokens")
    group.add_argument("--threads", type=int, dest="model.n_threads", help="CPU threads for the model")
    group.add_argument("--gpu-layers", type=int, dest="model.n_gpu_layers", help="layers to offload to a GPU")
    group.add_argument("--encoder-threads", type=int, dest="model.encoder_threads",
                       help="CPU threads for the evidence cross-encoder")
    group.add_argument("--calibration", type=Path, dest="calibration_path", help="verifier calibration JSON")
    group.add_argument("--judge", dest="judge", metavar="NAME",
                       help="a larger model that also reads claims beside retrieved evidence: qwen-1.5b"
                            " (needs pip install -e '.[judge]'; about 2 s a claim on 2 cores, 1.1 GB)")
    group.add_argument("--max-rounds", type=int, dest="max_rounds", help="justification revision rounds")
    group.add_argument("--selective-calibration", type=Path, dest="selective_path", help="selective-verdict calibration JSON")
    group.add_argument("--sufficiency-rater", type=Path, dest="sufficiency_path",
                       help="sufficiency rater JSON (from train-verifier --sufficiency-out)")
    group.add_argument("--abstain-threshold", type=float, dest="abstain_threshold",
                       help="abstain below this estimated chance of being right (0: never abstain)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="halluwatch", description="Catch factual hallucinations in chatbot conversations."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="check one assistant utterance against evidence")
    check.add_argument("text", help="the assistant's utterance")
    check.add_argument("--context", type=Path, help="JSONL of earlier turns: {role, text} per line")
    check.add_argument("--evidence", type=Path, help="JSONL of passages: {text, url, title, published_at} per line")
    check.add_argument("--grounding", type=Path,
                       help="JSONL of the documents the bot answered from, same fields: checked against them alone")
    check.add_argument("--date", help="when the utterance was made, YYYY-MM-DD")
    check.add_argument("--json", action="store_true", help="print the records as JSON")
    _model_flags(check)

    evaluate = sub.add_parser("eval", help="evaluate on a benchmark file")
    evaluate.add_argument(
        "dataset", choices=("averitec", "diahalu", "atomic", "halueval", "paraphrase", "segmentation", "source-hints"),
        help="atomic: labelled single-fact claims made from an AVeriTeC file's answers"
        " (see agents/evaluation/atomic_claims.py); halueval: HaluEval QA or dialogue rows, two turns each;"
        " paraphrase: rows of HaluEval QA's shape whose answers reword the knowledge (default: the bundled"
        " hand-written set);"
        " segmentation: how well claims stand alone over a DiaHalu or HaluEval file's assistant turns"
        " (or an AVeriTeC file's claims);"
        " source-hints: whether the sources stage helps knowledge-base search, on an AVeriTeC file",
    )
    evaluate.add_argument("file", type=Path, nargs="?", help="the benchmark file (paraphrase: optional)")
    evaluate.add_argument("--limit", type=int, help="only the first N rows")
    evaluate.add_argument("--out", type=Path, help="write the full report as JSON")
    evaluate.add_argument(
        "--fit-calibration", type=Path, metavar="OUT",
        help="(averitec, atomic, halueval) fit the verifier calibration on even rows, write it to OUT, report with it",
    )
    evaluate.add_argument("--fit-with", type=Path, action="append", default=[], metavar="FILE",
                          help="with --fit-calibration: also fit on the even rows of these saved judgements")
    evaluate.add_argument("--judgements", type=Path, metavar="FILE",
                          help="re-decide judgements saved by --save-judgements instead of running the model;"
                          " (segmentation) list the turns whose saved claims segmentation no longer makes, exit 1 if any")
    evaluate.add_argument("--rejudge-changed", action="store_true",
                          help="with --judgements: run the model again on the saved cases whose claims segmentation"
                          " now makes differently (after a segmentation change), keep the rest; --answers replays"
                          " the recorded segment answers meanwhile")
    evaluate.add_argument("--save-judgements", type=Path, metavar="FILE",
                          help="write what the model said on every row (to refit calibrations without the model)")
    evaluate.add_argument("--append-to-reply", metavar="TEXT",
                          help="append TEXT to every checked reply (e.g. an instruction to the checker), to measure"
                          " how far it sways the verdicts")
    evaluate.add_argument("--glued", action="store_true",
                          help="with --append-to-reply: join TEXT to the reply's last words with a space (no full"
                          " stop between them), as a run-on reply would carry it")
    evaluate.add_argument("--save-answers", type=Path, metavar="FILE",
                          help="(segmentation) keep every answer of the segment model in FILE; with --answers,"
                          " the model runs only for the prompts that recording lacks")
    evaluate.add_argument("--answers", type=Path, metavar="FILE",
                          help="(segmentation, --rejudge-changed) replay answers kept by --save-answers instead of running"
                          " the model: the segmentation rules re-measured in seconds on the same model answers")
    evaluate.add_argument("--quiet", action="store_true", help="no progress bar")
    _model_flags(evaluate)

    train = sub.add_parser("train-verifier", help="fit the verifier on the public sets' even rows, report the odd rows")
    train.add_argument("--data", type=Path, default=Path("../shared/data"),
                       help="folder holding halueval-qa/ and averitec/ (default ../shared/data)")
    train.add_argument("--judgements", type=Path, metavar="DIR",
                       help="read the model's judgements from DIR/<kind>-judgements.json where present (no model run)")
    train.add_argument("--save-judgements", type=Path, metavar="DIR", help="keep the judgements the model made in DIR")
    train.add_argument("--out", type=Path, default=Path("verify_calibration.json"), help="where to write the fit")
    train.add_argument("--sufficiency-out", type=Path, default=Path("sufficiency_rater.json"),
                       help="where to write the sufficiency rater fitted on the same rows")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    _model_flags(train)

    calibrate = sub.add_parser("calibrate", help="fit when verdicts abstain (selective verdicts) on labelled rows")
    calibrate.add_argument("file", type=Path, nargs="?", help="AVeriTeC or DiaHalu JSONL with labels")
    calibrate.add_argument("--judgements", type=Path, help="judgements saved by `eval --save-judgements` (no model run)")
    target = calibrate.add_mutually_exclusive_group()
    target.add_argument("--target-coverage", type=float, metavar="C", help="keep this share of verdicts (0-1)")
    target.add_argument("--target-precision", type=float, metavar="P", help="alerts right at least this often (0-1)")
    calibrate.add_argument("--out", type=Path, default=Path("selective_calibration.json"), help="calibration file to write")
    calibrate.add_argument("--plot", type=Path, help="coverage/accuracy plot (default: OUT with .png)")
    calibrate.add_argument("--save-judgements", type=Path, metavar="FILE", help="also write the model's judgements")
    calibrate.add_argument("--limit", type=int, help="only the first N rows")
    calibrate.add_argument("--quiet", action="store_true", help="no progress bar")
    _model_flags(calibrate)

    worker = sub.add_parser("worker", help="run the stage agents against a broker until stopped")
    worker.add_argument("--broker", dest="broker_url", help="kafka://host:9092 (default: HALLUWATCH_BROKER, else an embedded broker)")
    worker.add_argument("--evidence", action="append", type=Path, dest="evidence_files", help="JSONL passages to search (repeatable)")
    worker.add_argument("--partitions", type=int, dest="partitions", help="partitions per topic")
    worker.add_argument("--metrics-port", type=int, dest="metrics_port", help="HTTP port for /metrics and /alerts (default 9464)")
    worker.add_argument("--loglevel", default="WARNING", help="worker log level")
    worker.add_argument("--scripted-model", action="store_true",
                        help="answer every model call from a script at no cost: to measure the stream, not verdicts")
    _model_flags(worker)

    broker = sub.add_parser("broker", help="run the embedded Kafka-compatible broker in the foreground")
    broker.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one)")

    replay = sub.add_parser("replay", help="publish logged dialogues to the turns topic")
    replay.add_argument("file", type=Path, help="JSONL: one turn a line, one conversation a line, or DiaHalu rows")
    replay.add_argument("--broker", dest="broker_url", help="kafka://host:9092 (default: HALLUWATCH_BROKER)")
    replay.add_argument("--pace", choices=("fast", "original"), default="fast", help="original: keep the logged gaps")
    replay.add_argument("--wait", action="store_true", help="wait for the results and print a summary")
    replay.add_argument("--out", type=Path, help="with --wait: write the per-turn report as JSONL")
    replay.add_argument("--timeout", type=float, default=3600.0, help="with --wait: give up after this many seconds")
    replay.add_argument("--partitions", type=int, dest="partitions", help="partitions per topic (when creating them)")
    replay.add_argument("--rescore", action="store_true",
                        help="FILE is a report from --out: decide its verdicts again under the current calibration")
    _model_flags(replay)

    demo = sub.add_parser("demo", help="embedded broker + worker + bundled conversations with planted errors")
    demo.add_argument("--timeout", type=float, default=900.0, help="give up after this many seconds")
    demo.add_argument("--pace", type=float, default=6.0, metavar="SECONDS",
                      help="seconds between turns, as in live chats (default 6; 0: all at once, after the worker is ready)")
    _model_flags(demo)

    bench = sub.add_parser("bench", help="per-stage latency and token rates, with and without prefix reuse")
    bench.add_argument("--out", type=Path, help="where to write the JSON results (default bench.json; none with --scripted)")
    bench.add_argument("--repeat", type=int, default=2, help="passes over the bundled turns per mode")
    bench.add_argument("--scripted", action="store_true",
                       help="the stream's own throughput and cost: a worker on a scripted model that costs nothing")
    bench.add_argument("--conversations", type=int, default=100, help="with --scripted: synthetic conversations")
    bench.add_argument("--turns-per-conversation", type=int, default=10, help="with --scripted: turns in each (half assistant)")
    bench.add_argument("--paced", type=float, nargs="?", const=0.0, metavar="R",
                       help="publish the bench turns through the broker and a worker at R turns/s (default: half the"
                       " measured capacity) and report turn -> verdict and turn -> alert latency; with --scripted too")
    bench.add_argument("--timeout", type=float, default=600.0,
                       help="with --scripted or --paced: give up after this many seconds")
    _model_flags(bench)

    bench_metrics = sub.add_parser("bench-metrics", help="worker throughput with metrics on vs off, and the metrics code-path cost")
    bench_metrics.add_argument("--out", type=Path, default=Path("bench-metrics.json"), help="where to write the JSON results")
    bench_metrics.add_argument("--rounds", type=int, default=2, help="pairs of rounds (metrics off and on)")
    bench_metrics.add_argument("--copies", type=int, default=3, help="times each round replays the demo conversations")
    bench_metrics.add_argument("--repeat", type=int, default=2000, help="repetitions of the timed metrics code path")
    bench_metrics.add_argument("--timeout", type=float, default=900.0, help="give up on a round after this many seconds")
    _model_flags(bench_metrics)

    soak = sub.add_parser("soak", help="load with faults: two scripted workers, one stopped mid-run and another started")
    soak.add_argument("--conversations", type=int, default=200)
    soak.add_argument("--turns-per-conversation", type=int, default=10, help="turns in each (half assistant)")
    soak.add_argument("--timeout", type=float, default=900.0, help="give up after this many seconds")
    soak.add_argument("--stop", choices=("kill", "term"), default="kill",
                      help="how to stop the first worker: kill -9 (a crash) or SIGTERM (a drain)")
    soak.add_argument("--out", type=Path, help="write the counts as JSON")

    from stream.commands import dlq, kb

    kb.add_parsers(sub)
    dlq.add_parsers(sub)
    return parser


SETTING_FLAGS = ("calibration_path", "max_rounds", "broker_url", "partitions", "selective_path", "abstain_threshold",
                 "kb_path", "metrics_port", "sufficiency_path", "judge")


def settings_from(args: argparse.Namespace) -> Settings:
    flags = {k: v for k, v in vars(args).items() if k.startswith("model.") or k in SETTING_FLAGS}
    if getattr(args, "evidence_files", None):
        flags["evidence_files"] = tuple(args.evidence_files)
    return Settings.from_env().override(**flags)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = settings_from(args)
        if args.command == "check":
            from stream.commands.check import run_check

            return asyncio.run(run_check(args, settings))
        if args.command == "eval":
            from stream.commands.evaluate import run_eval

            return asyncio.run(run_eval(args, settings))
        if args.command == "train-verifier":
            from stream.commands.train_verifier import run_train_verifier

            return asyncio.run(run_train_verifier(args, settings))
        if args.command == "calibrate":
            from stream.commands.calibrate import run_calibrate

            return asyncio.run(run_calibrate(args, settings))
        if args.command == "bench" and args.paced is not None:
            from stream.commands.bench_paced import run_paced_bench

            return asyncio.run(run_paced_bench(args, settings))
        if args.command == "bench" and args.scripted:
            from stream.commands.bench_stream import run_stream_bench

            return asyncio.run(run_stream_bench(args, settings))
        if args.command == "bench":
            from stream.commands.bench import run_bench

            return asyncio.run(run_bench(args, settings))
        if args.command == "bench-metrics":
            from stream.commands.bench_metrics import run_bench_metrics

            return asyncio.run(run_bench_metrics(args, settings))
        if args.command == "worker":
            from stream.commands.worker import run_worker_command

            return run_worker_command(args, settings)
        if args.command == "broker":
            from stream.commands.broker import run_broker_command

            return run_broker_command(args)
        if args.command == "replay":
            from stream.commands.replay import run_replay

            return asyncio.run(run_replay(args, settings))
        if args.command == "kb":
            from stream.commands.kb import run_kb

            return run_kb(args, settings)
        if args.command == "web":
            from stream.commands.retrieval_bench import run_web_bench

            return run_web_bench(args, settings)
        if args.command == "soak":
            from stream.commands.soak import run_soak

            return asyncio.run(run_soak(args, settings))
        if args.command == "dlq":
            from stream.commands.dlq import run_dlq

            return asyncio.run(run_dlq(args, settings))
        if args.command == "demo":
            from stream.commands.demo import run_demo

            return asyncio.run(run_demo(args, settings))
    except HalluwatchError as exc:
        print(f"halluwatch: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("halluwatch: interrupted", file=sys.stderr)
        return 130
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
