#!/usr/bin/env bash
# Run every check: lint and types (model, missions and the browser-side view code), then
# all tests: model, CLI, build and server, Pyodide under Node.js, and the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/mypy
# One worker per core (pytest-xdist), a test file at a time on one worker (tests/conftest.py).
exec .venv/bin/python -m pytest -n auto --dist loadfile "$@"
