#!/usr/bin/env bash
# Install everything the lab and its tests need, from PyPI, npm and Debian only:
# a virtualenv in .venv with the project and its test extras, the pinned Pyodide
# from package-lock.json, and a Chromium for Playwright when it has none of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "setup: $*"; }

say "making .venv and installing the project with its test and docs extras (about a minute)"
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# setuptools says, as information, that an editable install of a flat layout (model/, missions/, lab/ beside
# the other folders) finds the packages with a meta-path finder; that is how this project is meant to be
# installed, so the notice is filtered by its text (the build backend inherits PYTHONWARNINGS).
PYTHONWARNINGS="ignore:Editable installation:UserWarning" \
    .venv/bin/python -m pip install --quiet -e ".[test,docs]"

if [ -f package-lock.json ]; then
    say "installing the pinned Pyodide from package-lock.json (npm ci)"
    npm ci --silent --no-audit --no-fund
fi

# Playwright cannot download its own browser everywhere; fall back to Debian's.
if ! PYTHONPATH=tests .venv/bin/python -c "from support.browser import find_browser; find_browser()" >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        say "installing Debian's chromium for the browser tests"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "setup: no browser for the browser tests; install chromium (or run 'playwright install chromium')" >&2
    fi
fi

# Build the site once, for `serve` and for the tests (which copy it while it is current with the sources);
# the memory snapshot and the precompiled standard library are cached by their inputs (lab/site/snapshot.py,
# lab/site/stdlib.py) for any later build.
say "building the site into site/ (the first build takes a few minutes: the memory snapshot, the trimmed"
say "standard library, every mission's sweep and the docs; later builds take the slow parts from a cache)"
.venv/bin/python -m lab build --out site
say "done: start the lab with .venv/bin/prefix-lab serve, then open http://127.0.0.1:8000/ (docs at /docs/)"
