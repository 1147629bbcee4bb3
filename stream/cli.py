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

import orjson

from schemas import HalluwatchError
from stream.settings import Settings

EXIT_USAGE = 2


def _model_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model (flags override HALLUWATCH_* variables)")
    group.add_argument("--model-path", type=Path, dest="model.model_path", help="GGUF file (default: embedded Gemma 3 270M)")
    group.add_argument("--n-ctx", type=int, dest="model.n_ctx", help="context size in tokens")
    group.add_argument("--threads", type=int, dest="model.n_threads", help="CPU threads for the model")
    group.add_argument("--gpu-layers", type=int, dest="model.n_gpu_layers", help="layers to offload to a GPU")
    group.add_argument("--calibration", type=Path, dest="calibration_path", help="verifier calibration JSON")
    group.add_argument("--max-rounds", type=int, dest="max_rounds", help="justification revision rounds")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="halluwatch", description="Catch factual hallucinations in chatbot conversations."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="check one assistant utterance against evidence")
    check.add_argument("text", help="the assistant's utterance")
    check.add_argument("--context", type=Path, help="JSONL of earlier turns: {role, text} per line")
    check.add_argument("--evidence", type=Path, help="JSONL of passages: {text, url, title, published_at} per line")
    check.add_argument("--date", help="when the utterance was made, YYYY-MM-DD")
    check.add_argument("--json", action="store_true", help="print the records as JSON")
    _model_flags(check)

    evaluate = sub.add_parser("eval", help="evaluate on a benchmark file")
    evaluate.add_argument("dataset", choices=("averitec", "diahalu"))
    evaluate.add_argument("file", type=Path)
    evaluate.add_argument("--limit", type=int, help="only the first N rows")
    evaluate.add_argument("--out", type=Path, help="write the full report as JSON")
    evaluate.add_argument(
        "--fit-calibration", type=Path, metavar="OUT",
        help="(averitec) fit the verifier calibration on even rows, write it to OUT, report with it",
    )
    evaluate.add_argument("--quiet", action="store_true", help="no progress bar")
    _model_flags(evaluate)

    bench = sub.add_parser("bench", help="per-stage latency and token rates, with and without prefix reuse")
    bench.add_argument("--out", type=Path, default=Path("bench.json"), help="where to write the JSON results")
    bench.add_argument("--repeat", type=int, default=2, help="passes over the bundled turns per mode")
    _model_flags(bench)
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    flags = {k: v for k, v in vars(args).items() if k.startswith("model.") or k in ("calibration_path", "max_rounds")}
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
        if args.command == "bench":
            from stream.commands.bench import run_bench

            return asyncio.run(run_bench(args, settings))
    except HalluwatchError as exc:
        print(f"halluwatch: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("halluwatch: interrupted", file=sys.stderr)
        return 130
    return EXIT_USAGE


def dump_json(obj: object) -> str:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


if __name__ == "__main__":
    sys.exit(main())
