"""The page survives broken files and a stuck or dying simulator, saying what happened in one line.

Each case runs in a fresh browser context whose requests may reach the test server only. Broken
files are made by rewriting responses; a stuck or dying worker by serving worker.js with a few
lines added that act on a marker in the URL. Limits are shortened through `prefixLabLimits`.
Every wait is on the page's own state (`data-lab`, the URL, the status line), never a sleep.
"""

import json
from pathlib import Path

import pytest
from conftest import READY, expected_metrics, metrics, page_limits
from helpers import asset

pytestmark = pytest.mark.browser

ERROR = "document.documentElement.dataset.lab === 'error'"


@pytest.fixture
def fresh(browser, server):
    """A new context (no cache, no storage) limited to the server's origin; yields a page maker."""
    contexts = []

    def make(limits="{bootMs: 60000, workMs: 20000, replaceMs: 4000}", route=None):
        context = browser.new_context()
        contexts.append(context)
        context.add_init_script(f"window.prefixLabLimits = {{...{json.dumps(page_limits())}, ...{limits}}}")

        def guard(r):
            if not r.request.url.startswith(server["origin"] + "/"):
                return r.abort()
            return (route or (lambda r: r.continue_()))(r)

        context.route("**/*", guard)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def site_file(server, name):
    return (Path(server["site"]) / asset(server["site"], name)).read_bytes()


def status(page):
    return page.locator("#status").inner_text()


def only(suffix, handler):
    return lambda r: handler(r) if r.request.url.split("#")[0].endswith(suffix) else r.continue_()


def test_broken_files_end_the_boot_with_one_readable_line_and_keep_the_default_numbers(fresh, server):
    wasm = site_file(server, "pyodide/pyodide.asm.wasm")
    cases = {
        "missing wasm": ("pyodide.asm.wasm", lambda r: r.abort(), "Failed to fetch"),
        "cut wasm": ("pyodide.asm.wasm", lambda r: r.fulfill(status=200, content_type="application/wasm",
                                                             body=wasm[:100_000]), "damaged"),
        "wasm as text": ("pyodide.asm.wasm", lambda r: r.fulfill(status=200, content_type="text/plain", body=wasm),
                         "damaged"),
        "garbage wheel": (".whl", lambda r: r.fulfill(status=200, content_type="application/zip",
                                                     body=b"PK\x03\x04 not a wheel" * 50), "not a zip file"),
    }
    defaults = expected_metrics()
    for name, (suffix, handler, reason) in cases.items():
        page = fresh(route=only(suffix, handler))
        page.goto(server["url"])
        page.wait_for_function(ERROR, timeout=60_000)
        line = status(page)
        assert line.startswith("The simulator could not start") and reason in line, (name, line)
        assert "\n" not in line.strip() and "Traceback" not in line, (name, line)
        assert "rebuild it (prefix-lab build)" in line
        assert metrics(page) == defaults, name


def test_a_page_whose_script_never_arrives_says_so(fresh, server):
    page = fresh(limits="{bootMs: 3000}", route=only(asset(server["site"], "bridge.js"), lambda r: r.abort()))
    page.goto(server["url"])
    page.wait_for_function(ERROR, timeout=30_000)
    assert status(page).startswith("The lab's scripts did not load")
    assert metrics(page) == expected_metrics()


def patched_worker(server, marker_code):
    """worker.js with `marker_code` run first for any view request whose hash holds 'marker'."""
    text = site_file(server, "worker.js").decode()
    hook = ('  if (msg.type === "view" && String(msg.request.hash).includes("marker")) {\n'
            f"{marker_code}\n  }}\n")
    text = text.replace("  if (msg.type !== \"view\") return;\n", "  if (msg.type !== \"view\") return;\n" + hook, 1)
    assert hook in text
    return lambda r: r.fulfill(status=200, content_type="text/javascript", body=text)


def test_a_failed_change_does_not_swallow_the_one_queued_behind_it(fresh, server):
    fail = ('    await new Promise((resolve) => setTimeout(resolve, 400));\n'
            '    postMessage({ type: "error", phase: "view", id: msg.id, message: "injected", detail: "injected" });\n'
            '    return;')
    page = fresh(route=only(asset(server["site"], "worker.js"), patched_worker(server, fail)))
    page.goto(server["url"])
    page.wait_for_function(READY, timeout=60_000)
    page.evaluate("""() => {
        location.hash = 'marker=1';                              // this change fails in the worker...
        setTimeout(() => window.prefixLab.changed('ctl:fleet.replicas', 9, 'value'), 100);  // ...with this one queued
    }""")
    page.wait_for_function(f"({READY}) && location.hash.includes('fleet.replicas=9')", timeout=30_000)
    assert metrics(page) == expected_metrics("fleet.replicas=9")


def test_a_worker_that_dies_is_replaced_and_the_next_change_works(fresh, server):
    die = "    close();\n    return;"
    page = fresh(limits="{bootMs: 60000, workMs: 2500, replaceMs: 4000}", route=only(asset(server["site"], "worker.js"), patched_worker(server, die)))
    page.goto(server["url"] + "#fleet.replicas=3")
    page.wait_for_function(READY, timeout=60_000)
    page.evaluate("location.hash = 'marker=1&fleet.replicas=5'")
    page.wait_for_function(f"({READY}) && document.querySelector('#status').textContent.includes('was stopped')",
                           timeout=60_000)
    assert page.evaluate("location.hash") == "#fleet.replicas=3"  # back to what is on screen
    assert metrics(page) == expected_metrics("fleet.replicas=3")
    page.evaluate("location.hash = 'fleet.replicas=6'")
    page.wait_for_function(f"({READY}) && location.hash === '#fleet.replicas=6'", timeout=60_000)
    assert metrics(page) == expected_metrics("fleet.replicas=6")


def test_a_newer_change_replaces_a_stuck_computation(fresh, server):
    spin = "    const end = Date.now() + 60_000;\n    while (Date.now() < end) {}"
    page = fresh(limits="{bootMs: 60000, workMs: 30000, replaceMs: 1000}", route=only(asset(server["site"], "worker.js"), patched_worker(server, spin)))
    page.goto(server["url"])
    page.wait_for_function(READY, timeout=60_000)
    page.evaluate("location.hash = 'marker=1'")  # the worker now spins for a minute
    page.wait_for_function("document.documentElement.dataset.lab === 'busy'", timeout=10_000)
    page.wait_for_function("performance.now() - window.prefixLab.timings.lastSent > 1200", timeout=10_000)
    page.evaluate("location.hash = 'fleet.replicas=2'")
    page.wait_for_function(f"({READY}) && location.hash === '#fleet.replicas=2'", timeout=60_000)
    assert metrics(page) == expected_metrics("fleet.replicas=2")
