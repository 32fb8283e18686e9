"""Fixtures for the browser tests: one built site, one `prefix-lab serve`, one Chromium.

Every page opened through the `page` fixture has all requests routed: anything
not for the serving origin is aborted and fails the test, as does a page error
or a same-origin 404. Tests wait on the page's own state
(`document.documentElement.dataset.lab`), never on sleeps.
"""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
READY = "document.documentElement.dataset.lab === 'ready'"


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """`prefix-lab serve` on a free port, building the site into an empty folder first."""
    site = tmp_path_factory.mktemp("site") / "site"
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


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    from lab.browser import launch

    with sync_playwright() as p:
        chromium = launch(p)
        yield chromium
        chromium.close()


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


@pytest.fixture
def guarded(browser, server):
    """A fresh browser context whose pages may talk to the server only."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    guard = Guard(server["origin"])
    context.route("**/*", guard.route)

    def watch(page):
        page.on("pageerror", lambda e: guard.errors.append(str(e)))
        page.on("console", lambda m: guard.errors.append(m.text) if m.type == "error" else None)
        page.on("response", lambda r: guard.missing.append(r.url) if r.status == 404 else None)
        return page

    yield context, guard, watch
    context.close()
    guard.check()


@pytest.fixture
def page(guarded):
    context, guard, watch = guarded
    return watch(context.new_page())


def open_lab(page, server, fragment="", path=""):
    page.goto(server["url"] + path + (("#" + fragment) if fragment else ""))
    page.wait_for_function(READY, timeout=60_000)
    return page


def wait_ready_with(page, condition):
    """Wait until the page is ready and a JS condition on it holds."""
    page.wait_for_function(f"({READY}) && ({condition})", timeout=30_000)


def metrics(page):
    """Headline data-values by metric, from a page or a frame."""
    return {el.get_attribute("data-metric"): el.get_attribute("data-value")
            for el in page.locator("[data-metric]").all()}


def cli_json(*sets):
    """What `prefix-lab run --json` prints for these `--set` values."""
    import json

    argv = [sys.executable, "-m", "lab", "run", "--json"]
    for s in sets:
        argv += ["--set", s]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def expected_metrics(*sets):
    import json

    data = cli_json(*sets)
    return {key: json.dumps(data[key]) for key in ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps",
                                                    "replica_count")}
