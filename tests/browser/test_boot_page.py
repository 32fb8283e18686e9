"""How the worker boots: from the build's memory snapshot, or normally when the snapshot cannot be used.

Both ways must reach `ready` with the same numbers as `prefix-lab run` and request nothing from another origin
(the guarded context aborts and reports any such request, page error or 404). The worker says which way it went
in `self.prefixLabBoot`. Which damaged snapshots it refuses, and why, is checked under Node.js on the worker's own
functions (tests/site/test_worker_snapshot.py); here one refused snapshot (made for another wheel) and one
missing snapshot lead to a normal boot, and the tests of a cold load share one booted page (`cold`). A snapshot
over Pyodide's fixed heap is refused by the build (tests/site/test_snapshot.py).
"""

import functools
import json
import re

import pytest
from conftest import READY, expected_metrics, guarded_context, metrics
from helpers import asset

pytestmark = pytest.mark.browser

SETUP = "fleet.replicas=8&router.kind=cache_aware"


def booted(page):
    """`self.prefixLabBoot` of the page's worker: {route, fallback, wheel, restoreMs, ...}."""
    page.wait_for_function(READY, timeout=90_000)
    return page.workers[0].evaluate("self.prefixLabBoot")


def same_numbers_as_the_cli(page):
    assert metrics(page) == expected_metrics()
    views = page.evaluate("hash => { const n = window.prefixLab.timings.changes.length; location.hash = hash; return n; }",
                          SETUP)
    page.wait_for_function(f"window.prefixLab.timings.changes.length > {views} && {READY}", timeout=60_000)
    assert metrics(page) == expected_metrics(*SETUP.split("&"))


@pytest.fixture(scope="module")
def cold(browser, server):
    """One cold load of the lab page, shared by the tests of how it booted: the page, and what it said at `ready`
    (its worker's `prefixLabBoot`, its timings and headline numbers), read before any test touches it."""
    with guarded_context(browser, server) as (context, _, watch):
        page = watch(context.new_page())
        page.goto(server["url"])
        boot = booted(page)
        yield page, {"boot": boot, "timings": page.evaluate("window.prefixLab.timings"), "metrics": metrics(page),
                     "screen": page.evaluate("innerHeight"),
                     "article": page.evaluate("[...document.querySelectorAll('.article-figure')]"
                                              ".map(f => f.dataset.figure)")}


def test_a_snapshot_boot_reaches_ready_with_the_clis_numbers(cold):
    page, at_ready = cold
    boot = at_ready["boot"]
    assert boot["route"] == "snapshot" and boot["fallback"] is None, boot
    assert boot["wheel"] == "zip" and boot["runtimeMs"] > 0 and boot["heapMs"] >= 0, boot
    assert at_ready["metrics"] == expected_metrics()
    same_numbers_as_the_cli(page)


def _stale_page(page, server):
    """The page names a wheel other than the one the snapshot was stamped with (same bytes, another name)."""
    wheel = asset(server["site"], "wheel")
    renamed = re.sub(r"\.([0-9a-f]{16})\.whl$", ".0000000000000000.whl", wheel)
    page.route(re.compile(r".*/(index\.html)?$"), lambda r: r.fulfill(
        response=r.fetch(), body=r.fetch().text().replace(wheel, renamed)))
    page.route("**/" + renamed, lambda r: r.fulfill(
        status=200, content_type="application/zip", body=(server["site"] / wheel).read_bytes()))


def test_a_snapshot_made_for_another_wheel_is_refused_and_the_worker_boots_normally_with_the_same_numbers(
        page, server):
    """The one damaged snapshot booted in a browser: found out after a whole restore (by the stamp the restored
    interpreter holds), so the normal boot runs in a worker whose Pyodide has already restored a heap. Every other
    way a snapshot is refused is found by the worker's own checks, run under Node.js on each damaged file
    (tests/site/test_worker_snapshot.py); they all end in the same fallback in `boot()`, checked here."""
    _stale_page(page, server)
    page.goto(server["url"])
    boot = booted(page)
    assert boot["route"] == "normal" and boot["fallback"] and boot["wheel"] == "unpacked", boot
    assert "made for prefix_lab-" in boot["fallback"], boot
    same_numbers_as_the_cli(page)


@functools.cache
def shipped_standard_library_requests() -> tuple[dict, ...]:
    """What the page asks for while every figure is shown: each mission's start, serving mode, agents and a
    bad link, as `lab.page.view.handle_json` reads them (the bridge adds its memo and progress, none here)."""
    from lab.page.figures import embed_figures
    from missions import MISSIONS

    embed = {"figure": ",".join(embed_figures())}
    starts = [{"hash": "unlock=all", "embed": embed, "action": {"type": "select_mission", "mission": m.id}}
              for m in MISSIONS]
    return (*starts, *[{"hash": fragment, "embed": embed} for fragment in (
        "fleet.decode=true&router.kind=cache_aware&events=burst@60+30x3",
        "traffic.kind=agent&traffic.agent_fanout=8&router.kind=cache_aware",
        "fleet.replicas=zz&nonsense=1")])


def unclocked(view):
    """`view` without what a clock wrote: a mission's memo says when it was chosen, by the answerer's clock."""
    view.get("memo", {}).pop("since", None)
    return view


@functools.cache
def cpythons_answers():
    """CPython's answers to `shipped_standard_library_requests()`, unclocked, as JSON text."""
    from lab.page.view import handle_json

    return [json.dumps(unclocked(json.loads(handle_json(json.dumps(r))))) for r in shipped_standard_library_requests()]


@pytest.mark.parametrize("route", ["snapshot", "normal"])
def test_every_figure_and_mission_computes_on_the_shipped_standard_library(page, server, route):
    """The standard library is trimmed to what the build saw the page import (and, restored from the snapshot,
    to what it had not imported yet): on either boot, the site's own worker answers every figure, every
    mission's start, serving mode and a bad link exactly as CPython does. The worker is asked directly, as
    the bridge asks it, so no chart is drawn: what is checked is the worker's Python, not the drawing."""
    requests = shipped_standard_library_requests()
    if route == "normal":
        page.route("**/" + asset(server["site"], "snapshot"), lambda r: r.abort())
    page.goto(server["url"] + "favicon.svg")  # an empty page of the site's origin: no bridge, no worker of its own
    answers = page.evaluate("""async ([script, wheel, requests]) => {
        const worker = new Worker(script, { type: "module", name: "prefix-lab " + wheel });
        const next = () => new Promise((resolve) => { worker.onmessage = (event) => resolve(event.data); });
        let message = next();
        worker.postMessage({ type: "boot", wheel });
        const ready = await message;
        if (ready.type !== "ready") return [ready];
        const out = [ready];
        for (const [id, request] of requests.entries()) {
            message = next();
            worker.postMessage({ type: "view", id, request });
            out.push(await message);
        }
        worker.terminate();
        return out;
    }""", [server["url"] + asset(server["site"], "worker.js"), server["url"] + asset(server["site"], "wheel"),
           list(requests)])
    ready, answers = answers[0], answers[1:]
    assert ready["type"] == "ready" and ready["route"] == route, ready
    assert [a["type"] for a in answers] == ["view"] * len(requests), answers[:1]
    for request, answer, expected in zip(requests, answers, cpythons_answers()):
        assert unclocked(answer["view"]) == json.loads(expected), request
    assert "nonsense" in json.dumps(answers[-1]["view"])  # the bad link's notice


def test_a_worker_named_for_its_wheel_boots_without_waiting_for_the_pages_message(cold, server):
    """While the worker's script loads, a message posted to it waits for the page's thread, busy drawing the
    page then: static/boot.js names the worker for its wheel, and the worker starts booting from its name."""
    page, _ = cold
    wheel = asset(server["site"], "wheel")
    with page.expect_request(lambda request: request.url.endswith(wheel), timeout=30_000):
        page.evaluate("""([script, wheel]) => {
            window.quiet = new Worker(script, { type: "module", name: "prefix-lab " + new URL(wheel, location.href) });
        }""", [asset(server["site"], "worker.js"), wheel])  # never sent a message
    page.evaluate("window.quiet.terminate()")


def test_a_cold_load_draws_what_is_on_screen_first_and_rewrites_nothing_the_build_drew(cold):
    """The page's documents (lab/site/pagedocs.py): at `ready` only those on screen are drawn,
    the first answer (the build's own setup) writes no model, and the rest are drawn once reached."""
    page, at_ready = cold
    timings, screen = at_ready["timings"], at_ready["screen"]
    early = [d for d in timings["draws"] if d["at"] < timings["ready"]]
    assert early and all(d["top"] < screen for d in early), early  # those a screen below wait for the answer
    assert not set(at_ready["article"]) & {d["figure"] for d in early}, early
    assert len(early) < timings["modelsMade"]["documents"] / 2
    made = [m["index"] for m in timings["made"] if m["at"] < timings["ready"]]
    assert sorted(made) == sorted(d["index"] for d in early), made  # made to be drawn: the rest wait too
    answer = timings["firstAnswer"]  # the worker's clock and the page's agree (bench/bench_page.py compares them)
    assert 0 < answer["sent"] < answer["taken"] + 1 and answer["taken"] <= timings["ready"], answer
    assert timings["changes"][0]["written"] == 0  # every chart and control already showed this answer
    assert at_ready["metrics"] == expected_metrics()

    page.wait_for_function(f"Bokeh.documents.length === {timings['modelsMade']['documents']}", timeout=30_000)
    page.evaluate("window.scrollTo(0, 0)")
    page.get_by_role("heading", name="The article's arithmetic").scroll_into_view_if_needed()
    far = page.evaluate("document.querySelector('.article-grid').getBoundingClientRect().bottom + scrollY")
    page.locator(".article-grid figure").last.scroll_into_view_if_needed()
    page.wait_for_function(f"window.prefixLab.timings.draws.some(d => d.top > {far} - 2 * innerHeight)",
                           timeout=30_000)
    views = page.evaluate("window.prefixLab.timings.changes.length")
    page.get_by_role("slider", name=re.compile("Replicas", re.I)).first.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"window.prefixLab.timings.changes.length > {views} && {READY}", timeout=60_000)
    assert page.evaluate("window.prefixLab.timings.changes.at(-1).written") > 0
