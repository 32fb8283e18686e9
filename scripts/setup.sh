#!/usr/bin/env bash
# Install everything the lab and its tests need, from PyPI, npm and Debian only:
# a virtualenv in .venv with the project and its test extras, the pinned Pyodide
# from package-lock.json, and a Chromium for Playwright when it has none of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test]"

if [ -f package-lock.json ]; then
    npm ci --silent --no-audit --no-fund
fi

# Playwright cannot download its own browser everywhere; fall back to Debian's.
if ! PYTHONPATH=tests .venv/bin/python -c "from support.browser import find_browser; find_browser()" >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "setup: no browser for the browser tests; install chromium (or run 'playwright install chromium')" >&2
    fi
fi

# Build the site once, for `serve` and for the tests (which copy it while it is current with the sources);
# the memory snapshot and the precompiled standard library are cached by their inputs (lab/site/snapshot.py,
# lab/site/stdlib.py) for any later build.
.venv/bin/python -m lab build --out site
