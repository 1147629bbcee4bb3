#!/usr/bin/env bash
# Set up halluwatch in .venv (first run compiles llama-cpp-python: ~8 minutes on 2 cores) and run every test tier.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e ".[test,judge]"
python -m pytest -q "$@"
