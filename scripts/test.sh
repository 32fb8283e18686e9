#!/usr/bin/env bash
# Run every check: lint and types (model, missions and the browser-side view code), then
# all tests: model, CLI, build and server, Pyodide under Node.js, and the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/mypy &  # beside the tests' start: each pytest-xdist worker first collects every test on its own
types=$!
# One worker per core (pytest-xdist), a test file at a time on one worker (tests/conftest.py), the files
# handed out in the order pytest collects them: tests/browser/, whose files take longest, first. (xdist's
# default hands out the files with the most tests first, which left a minute-long browser file to run on
# one worker while the other had finished.)
status=0
.venv/bin/python -m pytest -n auto --dist loadfile --no-loadscope-reorder "$@" || status=$?
wait "$types" || status=1
exit "$status"
