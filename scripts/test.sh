#!/usr/bin/env bash
# Run every test: model, CLI, build and server, and the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest "$@"
