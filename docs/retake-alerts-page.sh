#!/usr/bin/env bash
# Retake docs/alerts-page.png from a fresh demo run: the bundled conversations through a real worker and
# the embedded model, the alerts page in headless Chromium (needs chromium and chromium-driver).
set -euo pipefail
cd "$(dirname "$0")/.."
HALLUWATCH_SCREENSHOT=docs/alerts-page.png .venv/bin/python -m pytest -q tests/browser -k demo_alerts_on_the_page
