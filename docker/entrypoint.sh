#!/bin/sh
# Use the baked-in model unless HALLUWATCH_MODEL_PATH points at a mounted one.
set -e
if [ -z "${HALLUWATCH_MODEL_PATH}" ] && [ -n "${HALLUWATCH_MODEL_PATH_BAKED}" ]; then
    export HALLUWATCH_MODEL_PATH="${HALLUWATCH_MODEL_PATH_BAKED}"
fi
exec halluwatch "$@"
