"""How the lab page loads and responds, in headless Chromium against `prefix-lab serve`; each figure beside its target.

    python bench/bench_page.py [--loads N] [--changes N] [--site DIR]

Cold loads (a fresh browser context each time, so nothing is cached), with the
build's memory snapshot and again with the snapshot request aborted (the
worker's normal boot from the precompiled standard library), and a bare
`loadPyodide` of the same Pyodide with its stock standard library in a module
worker (the yardstick of issue 18's first goal). For each: bytes transferred
(compressed, as sent), time to the first numbers on screen (first contentful
paint: the headline is in the HTML), to the charts drawn, and to `data-lab`
`ready` (the simulator has computed the URL's setup).

Then control changes, one at a time, each written into a widget the way a
person's input would be: the time from the change to the redrawn charts
(patches applied and a frame painted), for the default setup and for 16
cache-aware replicas at 8 sessions a second; and a slider drag (live values
at 60 a second for three seconds): how many times a second the charts follow.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the browser harness

from support.browser import launch, serve_site  # noqa: E402

from lab.site.build import pyodide_dir  # noqa: E402

READY = "document.documentElement.dataset.lab === 'ready'"
# (model tag, value) pairs cycled through by the change benchmark: replicas, router, cache, rate.
CHANGES = [("ctl:fleet.replicas", "value", v) for v in (2, 6, 3, 8, 5)] + \
          [("ctl:router.kind", "value", v) for v in ("cache_aware", "round_robin", "consistent_hash", "least_loaded")] + \
          [("ctl:fleet.cache", "active", v) for v in (False, True)] + \
          [("ctl:traffic.session_rate", "value", v) for v in (1.5, 3, 2)]
BIG = "fleet.replicas=16&router.kind=cache_aware&traffic.session_rate=8"  # issue 18's fourth goal
BIG_CHANGES = [("ctl:traffic.session_rate", "value", v) for v in (7.5, 8, 8.5, 8)] + \
              [("ctl:fleet.memory_gb", "value", v) for v in (8, 4)]


def cold_load(browser, url: str, snapshot: bool = True) -> dict:
    context = browser.new_context()
    if not snapshot:
        context.route("**/snapshot.*.bin", lambda route: route.abort())
    page = context.new_page()
    sizes = []
    page.on("requestfinished", lambda r: sizes.append(r))
    page.goto(url)
    page.wait_for_function(READY, timeout=120_000)
    timings = page.evaluate("window.prefixLab.timings")
    boot = page.workers[0].evaluate("self.prefixLabBoot || {}") if page.workers else {}
    transferred = 0
    for request in sizes:
        s = request.sizes()
        transferred += s["responseBodySize"] + s["responseHeadersSize"]
    context.close()
    drawn = sum(1 for d in timings.get("draws", []) if d["at"] < timings["ready"])
    documents = (timings.get("modelsMade") or {}).get("documents", 0)
    return {"drawn": drawn, "documents": documents, "bytes": transferred, "requests": len(sizes),
            "first": timings["firstNumbers"],
            "charts": timings["chartsDrawn"], "ready": timings["ready"], "boot": timings["bootMs"],
            "answerSent": timings["firstAnswer"]["sent"], "answerTaken": timings["firstAnswer"]["taken"],
            "route": boot.get("route") or "normal", "restore": boot.get("restoreMs"), "fetch": boot.get("fetchMs"),
            "check": boot.get("checkMs"), "checkWait": boot.get("checkWaitMs"), "runtime": boot.get("runtimeMs"),
            "heap": boot.get("heapMs"), "wheel": boot.get("wheelMs")}


def bare_pyodide(browser, url: str, site: Path) -> float:
    """ms for `loadPyodide` alone (stock standard library, .py sources) in a module worker from the site's origin."""
    folder = json.loads((site / "build.json").read_text()).get("assets", {}).get("pyodide/", "pyodide/")
    stock = (pyodide_dir() / "python_stdlib.zip").read_bytes()
    context = browser.new_context()
    context.route("**/stock_stdlib.zip", lambda r: r.fulfill(status=200, content_type="application/zip", body=stock))
    page = context.new_page()
    page.goto(url + "build.json")  # a same-origin document with the site's CSP; nothing of the page runs
    ms = page.evaluate("""async ([folder]) => {
        const index = new URL(folder, location.href).href;
        const code = `const t0 = performance.now();
            const { loadPyodide } = await import("${index}pyodide.mjs");
            await loadPyodide({ indexURL: "${index}", stdLibURL: "${index}stock_stdlib.zip" });
            postMessage(performance.now() - t0);`;
        const worker = new Worker(URL.createObjectURL(new Blob([code], { type: "text/javascript" })), { type: "module" });
        return await new Promise((resolve, reject) => { worker.onmessage = (e) => resolve(e.data); worker.onerror = reject; });
    }""", [folder])
    context.close()
    return ms


def _ready_page(browser, url: str, fragment: str = ""):
    """A page that is ready and has drawn every part it shows (it draws those far below the fold while idle,
    after `ready`): the changes are measured on a settled page, not against its first idle moments."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(url + ("#" + fragment if fragment else ""))
    page.wait_for_function(f"({READY}) && window.prefixLab.undrawn === 0", timeout=120_000)
    return context, page


def change_latencies(browser, url: str, n: int, fragment: str = "", changes=CHANGES) -> list[list[float]]:
    """[total ms, Python compute ms in the worker, ms before the request left for the worker] for each change."""
    context, page = _ready_page(browser, url, fragment)
    out = []
    for i in range(n):
        tag, prop, value = changes[i % len(changes)]
        before = page.evaluate("window.prefixLab.timings.changes.length")
        page.evaluate("""([tag, prop, value]) => {
            const doc = Bokeh.documents[0];
            const model = [...doc.all_models].find(m => (m.tags || []).includes(tag));
            window.__t0 = performance.now();
            model[prop] = value;
        }""", [tag, prop, value])
        page.wait_for_function(f"window.prefixLab.timings.changes.length > {before} && {READY}", timeout=60_000)
        out.append(page.evaluate("[window.prefixLab.timings.changes.at(-1).applied - window.__t0,"
                                 " window.prefixLab.timings.changes.at(-1).computeMs,"
                                 " window.prefixLab.timings.changes.at(-1).sent - window.__t0]"))
    context.close()
    return out


def drag_rate(browser, url: str, seconds: float = 3.0) -> float:
    """Chart updates a second while a replicas slider is dragged: a live value every frame, as a handle reports it."""
    context, page = _ready_page(browser, url)
    rate = page.evaluate("""async (seconds) => {
        const before = window.prefixLab.timings.changes.length;
        const t0 = performance.now();
        let i = 0;
        while (performance.now() - t0 < seconds * 1000) {
            window.prefixLab.changed("ctl:fleet.replicas", 2 + (i++ % 15), "value", true);
            await new Promise((resolve) => requestAnimationFrame(resolve));
        }
        return (window.prefixLab.timings.changes.length - before) / ((performance.now() - t0) / 1000);
    }""", seconds)
    context.close()
    return rate


def p95(values: list[float]) -> float:
    values = sorted(values)
    return values[max(0, int(round(0.95 * len(values))) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=3, help="cold loads of each kind (default 3; 0: changes only)")
    parser.add_argument("--changes", type=int, default=50, help="control changes (default 50)")
    parser.add_argument("--site", type=Path, help="site folder (default: a fresh build in a temp folder)")
    args = parser.parse_args()
    site = args.site or Path(tempfile.mkdtemp(prefix="prefix-lab-bench-")) / "site"
    proc, url = serve_site(site)
    try:
        with sync_playwright() as p:
            browser = launch(p)
            if args.loads > 0:
                cold_loads(browser, url, site, args.loads)
            changes(browser, url, args.changes)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def cold_loads(browser, url: str, site: Path, loads: int) -> None:
    """Print the cold loads' figures: `loads` of each kind, interleaved."""
    snap, plain, bare = [], [], []
    for _ in range(loads):  # interleaved, so that the machine's moods fall on all three alike
        snap.append(cold_load(browser, url))
        plain.append(cold_load(browser, url, snapshot=False))
        bare.append(bare_pyodide(browser, url, site.resolve()))
    bare_ms = statistics.median(bare)
    med = {key: statistics.median(load[key] for load in snap)
           for key in ("bytes", "first", "charts", "ready", "boot", "answerSent", "answerTaken")}
    med_plain = {key: statistics.median(load[key] for load in plain) for key in ("bytes", "first", "ready", "boot")}
    routes = ", ".join(sorted({load["route"] for load in snap}))
    restored = [load for load in snap if load["restore"]]

    def part(key: str) -> float:
        return statistics.median(load[key] for load in restored) if restored else float("nan")

    print(f"cold load, median of {loads}, with the snapshot (worker booted by: {routes}):")
    print(f"  transferred               {med['bytes'] / 1e6:6.2f} MB   target: under 11 MB")
    print(f"  requests                  {statistics.median(load['requests'] for load in snap):6.0f}")
    print(f"  first numbers on screen   {med['first']:6.0f} ms   target: not after the snapshot-less "
          f"load's ({med_plain['first']:.0f} ms)")
    print(f"  charts drawn              {med['charts']:6.0f} ms   (those on screen: {snap[0]['drawn']} of the page's "
          f"{snap[0]['documents']} documents drawn by `ready`, the rest when near or idle)")
    print(f"  worker boot               {med['boot']:6.0f} ms   (the snapshot fetched and unzipped in "
          f"{part('fetch'):.0f} ms, beside it Pyodide's runtime started in {part('runtime'):.0f} ms; restored "
          f"{part('restore'):.0f} ms in, its pages laid into the heap in {part('heap'):.0f} ms; waiting on the "
          f"sha256 computed beside it ({part('check'):.0f} ms) {part('checkWait'):.0f} ms; the wheel mounted "
          f"in {part('wheel'):.0f} ms)")
    print(f"  first answer              {med['answerSent']:6.0f} ms   sent by the worker; taken up by the page at "
          f"{med['answerTaken']:.0f} ms (its thread is busy until then)")
    print(f"  ready                     {med['ready']:6.0f} ms   target: under 1500 ms, and at most 35% of a "
          f"bare loadPyodide: {100 * med['ready'] / bare_ms:.0f}% (the charts on screen alone, which `ready` "
          f"waits for: {100 * med['charts'] / bare_ms:.0f}%)")
    print(f"cold load, median of {loads}, snapshot refused (normal boot, precompiled trimmed stdlib):")
    print(f"  transferred               {med_plain['bytes'] / 1e6:6.2f} MB")
    print(f"  worker boot               {med_plain['boot']:6.0f} ms")
    print(f"  ready                     {med_plain['ready']:6.0f} ms   ({100 * med_plain['ready'] / bare_ms:.0f}% "
          "of a bare loadPyodide)")
    print(f"bare loadPyodide (stock .py stdlib, module worker), median of {loads}: {bare_ms:.0f} ms")


def changes(browser, url: str, n: int) -> None:
    """Print the control changes' figures (default setup, the big fleet) and the slider drag's rate."""
    for title, fragment, changes, target in (
            ("default setup", "", CHANGES, 50),
            ("16 cache-aware replicas, 8 sessions/s", BIG, BIG_CHANGES, 150)):
        rows = change_latencies(browser, url, n, fragment, changes)
        total, compute = [r[0] for r in rows], [r[1] for r in rows]
        rest = [r[0] - r[1] - r[2] for r in rows]
        print(f"control change to redrawn charts, {title}, {len(rows)} changes:")
        print(f"  total                   median {statistics.median(total):4.0f} ms, p95 {p95(total):4.0f} ms, "
              f"max {max(total):4.0f} ms   target: p95 under {target} ms")
        print(f"  Python in the worker    median {statistics.median(compute):4.0f} ms, p95 {p95(compute):4.0f} ms")
        print(f"  the rest (messages, patches applied, a frame painted)   median {statistics.median(rest):4.0f} ms, "
              f"p95 {p95(rest):4.0f} ms")
    print(f"slider drag: the charts follow {drag_rate(browser, url):.1f} times a second   target: 10 or more")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"(benchmark took {time.perf_counter() - started:.0f} s)")
