"""Fixtures for the browser tests: one built site, one `prefix-lab serve`, one Chromium.

Every page opened through the `page` or `fresh_lab` fixture has all requests
routed: anything not for the serving origin is aborted and fails the test, as
does a page error or a same-origin 404. Tests wait on the page's own state
(`document.documentElement.dataset.lab`), never on sleeps.

Booting Pyodide takes seconds a page, so the tests that do not interfere share
one booted page (`lab`, one for the session); `fresh_lab` hands it to a test
after `reset_lab` has put it back to a state a new page would have, and blames
the test for whatever the page did wrong meanwhile. Tests of booting, aborted
routes, limits or embedding open their own (`page`).
Repeated and long runs (ten loads in a row, soaks) are in bench/bench_loads.py.

With pytest-xdist (scripts/test.sh: `-n auto --dist loadfile --no-loadscope-reorder`) each worker has its own site, server, Chromium
and booted page, and runs a test file whole: its module fixtures are set up once.
"""

import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run, here and in CI: a test that passes once passes again.
# Set HYPOTHESIS_PROFILE=explore to let them search afresh.
# No deadline: speed is benched, not tested, and a busy two-core machine once took past Hypothesis's 200 ms.
settings.register_profile("fixed", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))


def _polled_every(ms, wait):
    """`wait` (Playwright's `wait_for_function`) checking its condition every `ms` unless told otherwise.

    Playwright's default checks once an animation frame, and asking for one makes the renderer draw a frame
    every 16 ms for the whole wait: 0.1 CPU-seconds a second of waiting on this machine, where the suite
    spends most of its browser time waiting on two busy cores. A timer draws nothing, and a change is seen
    at most `ms` later."""

    @functools.wraps(wait)
    def polled(self, expression, *, polling=None, **kwargs):
        return wait(self, expression, polling=ms if polling is None else polling, **kwargs)

    return polled


def _poll_by_timer(monkeypatch):
    from playwright.sync_api import Frame, Page

    for kind in (Page, Frame):
        monkeypatch.setattr(kind, "wait_for_function", _polled_every(20, kind.wait_for_function))

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
READY = "document.documentElement.dataset.lab === 'ready'"
SETTLED = "['ready', 'error'].includes(document.documentElement.dataset.lab)"
# Counts the views the bridge has applied (it fires `prefix-lab:view` after each, once `ready` is set), so a
# wait can tell the answer to its own change from a `ready` that was there before the change arrived.
COUNT_VIEWS = ("window.__labViews = 0;"
               "document.addEventListener('prefix-lab:view', () => { window.__labViews += 1; });")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """`prefix-lab serve` on a free port, on a site of the tests' own (some tests write files into it).

    When the project's `site/` (built by scripts/setup.sh) is current with the sources, it is copied: the
    same build, without half a minute of building it again. Otherwise `serve` builds into the empty folder.
    """
    from lab.site.build import site_is_current

    site = tmp_path_factory.mktemp("site") / "site"
    built = Path(__file__).resolve().parent.parent / "site"
    if site_is_current(built):
        shutil.copytree(built, site, symlinks=False)
    proc = subprocess.Popen([sys.executable, "-m", "lab", "serve", "--dir", str(site), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url, lines = None, []
    deadline = time.monotonic() + 240
    while url is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"is at (http://127\.0\.0\.1:\d+/)", line)
        url = m.group(1) if m else None
    if url is None:
        proc.kill()
        pytest.fail("prefix-lab serve did not start:\n" + "".join(lines))
    yield {"url": url, "site": site, "origin": url.rstrip("/")}
    proc.terminate()
    proc.wait(timeout=10)


# The tests' browser never optimises the page's JavaScript (no TurboFan), and tiers Pyodide's WebAssembly up from
# Liftoff, its first compiler, only where it is about ten times as hot as Chromium waits for. Most test pages live for
# seconds, and tiering a hot interpreter up cost each new renderer 1-1.5 CPU-seconds in background threads, on a
# machine whose two cores the suite keeps busy: the whole suite took 682 CPU-s (348 s) and takes 587 (300 s), back
# to back on one machine. A long test page (every mission played) still gets its hottest code optimised and costs
# what it did. No number can move: WebAssembly and JavaScript give the same results in every tier, and the page's
# numbers are compared with CPython's. LAB_TEST_ALL_TIERS=1 runs the tests in a visitor's browser; bench/ always does.
TEST_ONLY_FLAGS = ("--js-flags=--no-opt --wasm-tiering-budget=20000000",)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright
    from support.browser import launch

    with pytest.MonkeyPatch.context() as patch, sync_playwright() as p:
        _poll_by_timer(patch)
        chromium = launch(p, () if os.environ.get("LAB_TEST_ALL_TIERS") else TEST_ONLY_FLAGS)
        yield chromium
        chromium.close()


def _restore_crash(message):
    """Pyodide's own report of a crash inside loadPyodide (a snapshot of damaged bytes may crash the restore): the
    worker falls back to a normal boot, which the damaged-snapshot tests check; any other error still counts."""
    where = (message.location or {}).get("url", "")
    return "pyodide" in where and "loadPyodide" in message.text + "".join(
        str(a) for a in getattr(message, "args", [])) or (
        "pyodide" in where and message.text.startswith(("Pyodide has suffered a fatal error", "The cause of the fatal",
                                                        "RuntimeError: memory access out of bounds",
                                                        "Another error occurred while handling the fatal error",
                                                        "TypeError: Reflect.ownKeys")))


class Guard:
    """What a page tried that it must not: other origins, errors, missing files."""

    def __init__(self, origin):
        self.origin = origin
        self.foreign, self.errors, self.missing, self.seen = [], [], [], []

    def route(self, route):
        url = route.request.url
        self.seen.append(url)
        if url.startswith(self.origin + "/") or url.startswith("data:") or url.startswith("blob:"):
            route.continue_()
        else:
            self.foreign.append(url)
            route.abort()

    def check(self):
        assert not self.foreign, f"requests to other origins: {self.foreign[:5]}"
        assert not self.errors, f"page errors: {self.errors[:5]}"
        assert not self.missing, f"missing files: {self.missing[:5]}"

    def clear(self):
        """Forget what went wrong so far (`seen` stays): the next test of a shared page starts clean."""
        self.foreign.clear()
        self.errors.clear()
        self.missing.clear()


def page_limits(helpers=0, draw_away=False):
    """The `window.prefixLabLimits` a test's own pages start with (see guarded_context); helpers=None and
    draw_away=True are a visitor's."""
    limits = {} if helpers is None else {"helpers": int(helpers)}
    if not draw_away:
        limits["drawAway"] = False
    return limits


@contextmanager
def guarded_context(browser, server, helpers=0, draw_away=False):
    """A new browser context whose pages may talk to the server only; checked when it closes.

    Its pages start `helpers` helper workers (None: as many as a visitor's page would). The helpers only ever
    add answers equal to fresh ones, sooner (tests/browser/test_speculation_page.py): a test of something
    else does not need them, and each costs a second of CPU to start and more to compute ahead, on a machine
    whose two cores the suite already keeps busy. Likewise, unless `draw_away`, the charts far from view are
    drawn only once they come near, not in idle time too (2-3 s of CPU a page; what a visitor's page draws
    there is what it draws near, tests/browser/test_first_glance_page.py). The shared lab page (`lab`) keeps
    a visitor's of both."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    limits = page_limits(helpers, draw_away)
    if limits:
        context.add_init_script(f"window.prefixLabLimits = {{...window.prefixLabLimits, ...{json.dumps(limits)}}}")
    guard = Guard(server["origin"])
    context.route("**/*", guard.route)

    def watch(page):
        page.on("pageerror", lambda e: guard.errors.append(str(e)))
        page.on("console", lambda m: guard.errors.append(m.text) if m.type == "error" and not _restore_crash(m) else None)
        page.on("response", lambda r: guard.missing.append(r.url) if r.status == 404 else None)
        return page

    yield context, guard, watch
    context.close()
    guard.check()


@pytest.fixture
def guarded(browser, server, request):
    """A fresh browser context for one test: `(context, guard, watch)`; with the `helpers` mark, its pages start
    the helper workers a visitor's page would, and with `draws_away`, draw the charts far from view as it does."""
    helpers = None if request.node.get_closest_marker("helpers") else 0
    draw_away = request.node.get_closest_marker("draws_away") is not None
    with guarded_context(browser, server, helpers, draw_away) as fresh:
        yield fresh


@pytest.fixture
def page(guarded):
    context, guard, watch = guarded
    return watch(context.new_page())


@pytest.fixture(scope="session")
def lab_guarded(browser, server):
    """The guarded context of the shared lab page: `(context, guard, watch)`."""
    with guarded_context(browser, server, helpers=None, draw_away=True) as shared:
        yield shared


@pytest.fixture(scope="session")
def lab(lab_guarded, server):
    """One lab page, booted once for the session; tests take it through `fresh_lab`."""
    context, _, watch = lab_guarded
    context.add_init_script(COUNT_VIEWS)
    return open_lab(watch(context.new_page()), server)


@pytest.fixture
def fresh_lab(lab, lab_guarded):
    """The module's booted lab page, reset to the default setup with no saved progress."""
    _, guard, _ = lab_guarded
    reset_lab(lab)
    yield lab
    try:
        guard.check()  # blame this test for what it made the page do
    finally:
        guard.clear()


def reset_lab(page, fragment=""):
    """Put a booted lab page into the state a new page opened at `#fragment` shows, without reloading it.

    Once the page has settled: mission progress is reset through the page's own action (it lives in the
    bridge as well as in localStorage), the event inputs (not held in the hash) go back to their defaults,
    the hash is set, and localStorage is cleared. Each change waits for the page's answer to it: one more
    view applied and `data-lab` back at `ready`.
    """
    from lab.page.controls import EVENT_INPUTS

    defaults = {i.name: i.default for i in EVENT_INPUTS}

    page.wait_for_function(SETTLED, timeout=60_000)
    assert page.evaluate("document.documentElement.dataset.lab") == "ready", "the shared lab page is not ready"
    _change_and_wait(page, "window.prefixLab.action({type: 'reset_progress'})")
    page.evaluate("""inputs => {
        for (const doc of Bokeh.documents)
            for (const model of doc.all_models)
                for (const tag of model.tags ?? []) if (tag in inputs) model.value = inputs[tag];
        document.activeElement?.blur();
        window.scrollTo(0, 0);
    }""", defaults)
    if page.evaluate("location.hash.slice(1)") != fragment:
        _change_and_wait(page, f"location.hash = {json.dumps(fragment)}")
    page.evaluate("localStorage.clear()")  # a new page has nothing stored, not even '{}'
    return page


def _change_and_wait(page, change):
    """Run a JS statement that makes the page compute, and wait until that view is applied and it is ready."""
    before = page.evaluate(f"() => {{ const n = window.__labViews; {change}; return n; }}")
    page.wait_for_function(f"window.__labViews > {before} && ({READY})", timeout=30_000)


def open_lab(page, server, fragment="", path=""):
    page.goto(server["url"] + path + (("#" + fragment) if fragment else ""))
    page.wait_for_function(READY, timeout=60_000)
    return page


def open_section(page, name):
    """Open a closed section of the page (`<details data-remember=name>`) as a person does: a click on its
    summary. One already open (the shared page keeps what an earlier test opened) is left as it is."""
    details = page.locator(f'details[data-remember="{name}"]')
    if not details.evaluate("d => d.open"):
        details.locator("summary").first.click()
    page.wait_for_function(f"document.querySelector('details[data-remember=\"{name}\"]').open")


def wait_ready_with(page, condition):
    """Wait until the page is ready and a JS condition on it holds."""
    page.wait_for_function(f"({READY}) && ({condition})", timeout=30_000)


def metrics(page):
    """Headline data-values by metric, from a page or a frame."""
    return {el.get_attribute("data-metric"): el.get_attribute("data-value")
            for el in page.locator("[data-metric]").all()}


def cli(*args):
    """What `prefix-lab ARGS` prints, read as JSON: the command's own `main`, run in this process (the tests of
    the CLI run it as a process, tests/cli/); a status other than 0 fails the test with what it said."""
    from lab.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(args))
    assert status == 0, f"prefix-lab {' '.join(args)} exited {status}: {err.getvalue()[-2000:]}"
    return json.loads(out.getvalue())


def cli_json(*sets):
    """What `prefix-lab run --json` prints for these `--set` values."""
    return cli("run", "--json", *(arg for s in sets for arg in ("--set", s)))


def expected_metrics(*sets):
    """The headline data-values `prefix-lab run --json` gives for these `--set` values."""
    return dict(_expected_metrics(sets))


@functools.cache
def _expected_metrics(sets):
    data = cli_json(*sets)
    return {key: json.dumps(data[key]) for key in ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps",
                                                    "replica_count")}
