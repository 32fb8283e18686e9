"""How the worker boots: from the build's memory snapshot, or normally when the snapshot cannot be used.

Both ways must reach `ready` with the same numbers as `prefix-lab run`, request nothing from another
origin (the guarded context aborts and reports any such request, page error or 404), and the normal
boot must follow when the snapshot is missing, damaged (any bytes but the ones the build made: the
worker checks the size and the page map before restoring and the sha256 beside the restore, before
the interpreter is used), holds a bigger heap than the build said (checked before Pyodide sees a
byte), or was made for another wheel than the page loads. A snapshot over Pyodide's fixed heap is
refused by the build (test_snapshot.py). The worker says which way it went in `self.prefixLabBoot`.
"""

import hashlib
import json
import re
import struct

import pytest
from conftest import READY, expected_metrics, metrics
from helpers import asset

from lab.site import snapshot as snapshots

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


def test_the_build_ships_a_snapshot_stamped_with_its_wheel(server):
    built = json.loads((server["site"] / "build.json").read_text())
    assert built["snapshot"]["kind"] == "snapshot", built["snapshot"]
    assert built["snapshot"]["zeroed"] > 1_000_000, "the heap's free chunks were not zeroed (scripts/snapshot.mjs)"
    assert built["stdlib"]["kind"] == "pyc" and 100 < built["stdlib"]["modules"] < 300
    worker = (server["site"] / built["assets"]["worker.js"]).read_text()
    assert f'const SNAPSHOT = "./{built["assets"]["snapshot"]}";' in worker
    shipped = (server["site"] / built["assets"]["snapshot"]).read_bytes()
    assert f"const SNAPSHOT_BYTES = {len(shipped)};" in worker and built["snapshot"]["file"] == len(shipped)
    # in page-map form, without the pages of zeros (about half the heap) nor those the runtime holds already
    length, _, _ = struct.unpack_from("<III", shipped, len(snapshots.MAGIC))
    assert f"const SNAPSHOT_IMAGE_BYTES = {length};" in worker and built["snapshot"]["bytes"] == length
    assert length <= 30 * 2**20 + 4096 and len(shipped) < 0.5 * length
    first_page = shipped[len(snapshots.MAGIC) + 12 + 2 * -(-length // 4096 // 8):]
    assert first_page[:4] == struct.pack("<I", 1886286592)  # Pyodide's own header: its magic number


def test_a_snapshot_boot_reaches_ready_with_the_clis_numbers(page, server):
    page.goto(server["url"])
    boot = booted(page)
    assert boot["route"] == "snapshot" and boot["fallback"] is None, boot
    assert boot["wheel"] == "zip" and boot["runtimeMs"] > 0 and boot["heapMs"] >= 0, boot
    same_numbers_as_the_cli(page)


def _stale_page(page, server):
    """The page names a wheel other than the one the snapshot was stamped with (same bytes, another name)."""
    wheel = asset(server["site"], "wheel")
    renamed = re.sub(r"\.([0-9a-f]{16})\.whl$", ".0000000000000000.whl", wheel)
    page.route(re.compile(r".*/(index\.html)?$"), lambda r: r.fulfill(
        response=r.fetch(), body=r.fetch().text().replace(wheel, renamed)))
    page.route("**/" + renamed, lambda r: r.fulfill(
        status=200, content_type="application/zip", body=(server["site"] / wheel).read_bytes()))


def _cut_snapshot(page, server):
    snapshot = asset(server["site"], "snapshot")
    data = (server["site"] / snapshot).read_bytes()
    page.route("**/" + snapshot, lambda r: r.fulfill(status=200, body=data[: len(data) // 3]))


DAMAGED = "damaged-snapshot.bin"  # removed after the test


def _served_instead(change):
    """The snapshot's bytes as `change` leaves them (the same size), from a copy in the site served by the real
    server (a route cannot give a body of many MB)."""
    def spoil(page, server):
        snapshot = asset(server["site"], "snapshot")
        data = bytearray((server["site"] / snapshot).read_bytes())
        change(data)
        (server["site"] / DAMAGED).write_bytes(bytes(data))
        page.route("**/" + snapshot, lambda r: r.continue_(url=server["url"] + DAMAGED))
    return spoil


def _named_for_its_bytes(change):
    """The snapshot's bytes as `change` leaves them, under a name that holds their own sha256 and that the worker
    is rewritten to fetch: the sha256 agrees, so whatever else is wrong has to be found by the worker."""
    def spoil(page, server):
        snapshot = asset(server["site"], "snapshot")
        data = bytearray((server["site"] / snapshot).read_bytes())
        change(data)
        renamed = f"{DAMAGED.split('.')[0]}.{hashlib.sha256(data).hexdigest()[:16]}.bin"
        (server["site"] / renamed).write_bytes(bytes(data))
        worker = asset(server["site"], "worker.js")
        page.route("**/" + worker, lambda r: r.fulfill(response=r.fetch(), body=r.fetch().text().replace(
            f'const SNAPSHOT = "./{snapshot}";', f'const SNAPSHOT = "./{renamed}";')))
        return renamed
    return spoil


def _other_bytes(data):
    """Bytes of the heap's stored pages changed (near the end, so the restore itself may well succeed): only
    the sha256, computed beside the restore, tells."""
    for offset in range(len(data) - 2**20, len(data), 4096):
        data[offset] ^= 0x5A


def _map_off_by_a_page(data):
    """A page of zeros marked as stored: the maps no longer account for the file's bytes."""
    length, size, _ = struct.unpack_from("<III", data, len(snapshots.MAGIC))
    start = len(snapshots.MAGIC) + 12
    maps = -(-length // size // 8)
    stored, held = data[start:start + maps], data[start + maps:start + 2 * maps]
    zero = next(i for i in range(maps * 8) if not (stored[i // 8] | held[i // 8]) >> (i % 8) & 1)
    data[start + zero // 8] |= 1 << (zero % 8)


def _other_runtime(data):
    """A checksum of the pages the runtime holds that the runtime's memory will not give."""
    at = len(snapshots.MAGIC) + 8
    struct.pack_into("<I", data, at, struct.unpack_from("<I", data, at)[0] ^ 1)


def _bigger_heap(data):
    """A file that says it holds a snapshot bigger than the one the build sized the worker's heap for."""
    struct.pack_into("<I", data, len(snapshots.MAGIC), snapshots.HEAP_BYTES + 65_536)


def _not_a_page_map(data):
    data[:len(snapshots.MAGIC)] = b"\x00" * len(snapshots.MAGIC)


FAILURES = {
    "missing": (lambda page, server: page.route("**/" + asset(server["site"], "snapshot"), lambda r: r.abort()),
                "fetch"),
    "damaged": (_cut_snapshot, "damaged"),
    "the right size, other bytes": (_served_instead(_other_bytes), "sha256"),
    "a page map that does not match the file": (_served_instead(_map_off_by_a_page), "page maps account for"),
    "pages the runtime does not hold": (_named_for_its_bytes(_other_runtime), "runtime's memory is not the one"),
    "a heap bigger than the build said": (_served_instead(_bigger_heap), "holds a snapshot of 31522816 bytes"),
    "not in page-map form": (_served_instead(_not_a_page_map), "not in page-map form"),
    "made for another wheel": (_stale_page, "made for prefix_lab-"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_when_the_snapshot_cannot_be_used_the_worker_boots_normally_with_the_same_numbers(page, server, failure):
    spoil, reason = FAILURES[failure]
    renamed = spoil(page, server)  # the name of a copy written into the site, if the spoiling wrote one under its own
    try:
        page.goto(server["url"])
        boot = booted(page)
    finally:
        (server["site"] / DAMAGED).unlink(missing_ok=True)
        if isinstance(renamed, str):
            (server["site"] / renamed).unlink(missing_ok=True)
    assert boot["route"] == "normal" and boot["fallback"] and boot["wheel"] == "unpacked", boot
    assert reason.lower() in boot["fallback"].lower(), boot
    same_numbers_as_the_cli(page)


@pytest.mark.parametrize("route", ["snapshot", "normal"])
def test_every_figure_and_mission_computes_on_the_shipped_standard_library(page, server, route):
    """The standard library is trimmed to what the build saw the page import (and, restored from the snapshot,
    to what it had not imported yet): every figure, every mission's start, serving mode and a bad link run on it
    without an error, on either boot."""
    from lab.page.figures import embed_figures
    from missions import MISSIONS

    if route == "normal":
        page.route("**/" + asset(server["site"], "snapshot"), lambda r: r.abort())
    page.add_init_script("window.__views = 0; document.addEventListener('prefix-lab:view', () => window.__views++);")
    page.goto(server["url"] + "embed.html?figure=" + ",".join(embed_figures()) + "#unlock=all")
    assert booted(page)["route"] == route

    def answered(change):
        views = page.evaluate(f"() => {{ const n = window.__views; {change}; return n; }}")
        page.wait_for_function(f"window.__views > {views} && {READY}", timeout=60_000)

    for mission in MISSIONS:  # waited on by its own effect: an answer to the sweep's fetch may come first
        page.evaluate(f"window.prefixLab.action({{type: 'select_mission', mission: {json.dumps(mission.id)}}})")
        page.wait_for_function(f"({READY}) && location.hash.includes({json.dumps('mission=' + mission.id + '&')})",
                               timeout=60_000)
    for fragment in ("fleet.decode=true&router.kind=cache_aware&events=burst@60+30x3",
                     "traffic.kind=agent&traffic.agent_fanout=8&router.kind=cache_aware",
                     "fleet.replicas=zz&nonsense=1"):
        answered(f"location.hash = {json.dumps(fragment)}")
    assert "nonsense" in page.locator("#notices").inner_text()


def test_a_worker_named_for_its_wheel_boots_without_waiting_for_the_pages_message(page, server):
    """While the worker's script loads, a message posted to it waits for the page's thread, busy drawing the
    page then: static/boot.js names the worker for its wheel, and the worker starts booting from its name."""
    page.goto(server["url"])
    page.wait_for_function(READY, timeout=90_000)
    wheel = asset(server["site"], "wheel")
    with page.expect_request(lambda request: request.url.endswith(wheel), timeout=30_000):
        page.evaluate("""([script, wheel]) => {
            window.quiet = new Worker(script, { type: "module", name: "prefix-lab " + new URL(wheel, location.href) });
        }""", [asset(server["site"], "worker.js"), wheel])  # never sent a message


def test_a_cold_load_draws_what_is_on_screen_first_and_rewrites_nothing_the_build_drew(page, server):
    """The page's documents (lab/site/pagedocs.py): at `ready` only those on screen are drawn,
    the first answer (the build's own setup) writes no model, and the rest are drawn once reached."""
    page.goto(server["url"])
    page.wait_for_function(READY, timeout=90_000)
    timings = page.evaluate("window.prefixLab.timings")
    screen = page.evaluate("innerHeight")
    early = [d for d in timings["draws"] if d["at"] < timings["ready"]]
    article = set(page.evaluate("[...document.querySelectorAll('.article-figure')].map(f => f.dataset.figure)"))
    assert early and all(d["top"] < screen for d in early), early  # those a screen below wait for the answer
    assert not article & {d["figure"] for d in early}, early
    assert len(early) < timings["modelsMade"]["documents"] / 2
    made = [m["index"] for m in timings["made"] if m["at"] < timings["ready"]]
    assert sorted(made) == sorted(d["index"] for d in early), made  # made to be drawn: the rest wait too
    answer = timings["firstAnswer"]  # the worker's clock and the page's agree (bench/bench_page.py compares them)
    assert 0 < answer["sent"] < answer["taken"] + 1 and answer["taken"] <= timings["ready"], answer
    assert timings["changes"][0]["written"] == 0  # every chart and control already showed this answer
    assert metrics(page) == expected_metrics()

    page.wait_for_function(f"Bokeh.documents.length === {timings['modelsMade']['documents']}", timeout=30_000)
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


SOURCE = """name => {
    const model = Bokeh.documents.map(d => d.get_model_by_name(name)).find(Boolean);
    const data = model.data instanceof Map ? Object.fromEntries(model.data) : model.data;
    return JSON.stringify(Object.entries(data).map(([k, v]) => [k, Array.from(v)]));
}"""


def test_charts_far_off_screen_wait_while_a_slider_moves_and_catch_up_when_the_page_is_idle(page, server):
    page.goto(server["url"])
    page.wait_for_function(f"({READY}) && window.prefixLab.timings.draws.some(d => d.figure === 'gpu')",
                           timeout=90_000)  # drawn while idle, far below the fold
    far, near = page.evaluate(SOURCE, "src:gpu"), page.evaluate(SOURCE, "src:ttft")
    replicas = page.get_by_role("slider", name="Replicas")
    box = replicas.bounding_box()
    views = page.evaluate("window.prefixLab.timings.changes.length")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + 120, box["y"] + box["height"] / 2, steps=4)
    page.wait_for_function(f"window.prefixLab.timings.changes.length > {views} && {READY}", timeout=60_000)
    assert "fleet.replicas=" in page.evaluate("location.hash")
    assert page.evaluate(SOURCE, "src:ttft") != near  # the chart in view follows the slider...
    assert page.evaluate("window.prefixLab.timings.changes.at(-1).held") > 0  # ...the one three screens below waits
    views = page.evaluate("window.prefixLab.timings.changes.length")
    page.mouse.up()
    page.wait_for_function(f"window.prefixLab.timings.changes.length > {views} && {READY}", timeout=60_000)
    page.wait_for_function("window.prefixLab.undrawn === 0", timeout=30_000)
    assert page.evaluate(SOURCE, "src:gpu") != far  # and catches up once the page is idle
