"""How the lab page loads and responds, in headless Chromium against `prefix-lab serve`.

    python bench/bench_page.py [--loads N] [--changes N] [--site DIR]

Cold load (a fresh browser context each time, so nothing is cached):
bytes transferred (compressed, as sent), time to the first numbers on screen
(first contentful paint: the headline is in the HTML), time until the charts
are drawn, and time until `data-lab` is `ready` (the simulator can compute).
Then `--changes` control changes, one at a time, each written into a widget
the way a person's input would be: the time from the change to the updated
charts (patches applied and a frame painted). Goals on the two-core machine:
first numbers under 1 s, ready under 5 s, control-to-chart p95 under 150 ms.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.browser import launch, serve_site  # noqa: E402

READY = "document.documentElement.dataset.lab === 'ready'"
# (model tag, value) pairs cycled through by the change benchmark: replicas, router, cache, rate.
CHANGES = [("ctl:fleet.replicas", "value", v) for v in (2, 6, 3, 8, 5)] + \
          [("ctl:router.kind", "value", v) for v in ("cache_aware", "round_robin", "consistent_hash", "least_loaded")] + \
          [("ctl:fleet.cache", "active", v) for v in (False, True)] + \
          [("ctl:traffic.session_rate", "value", v) for v in (1.5, 3, 2)]


def cold_load(browser, url: str) -> dict:
    context = browser.new_context()
    page = context.new_page()
    sizes = []
    page.on("requestfinished", lambda r: sizes.append(r))
    page.goto(url)
    page.wait_for_function(READY, timeout=120_000)
    timings = page.evaluate("window.prefixLab.timings")
    transferred = 0
    for request in sizes:
        s = request.sizes()
        transferred += s["responseBodySize"] + s["responseHeadersSize"]
    context.close()
    return {"bytes": transferred, "requests": len(sizes), "first": timings["firstNumbers"],
            "charts": timings["chartsDrawn"], "ready": timings["ready"], "boot": timings["bootMs"]}


def change_latencies(browser, url: str, n: int) -> list[list[float]]:
    """[total ms, of which Python compute ms in the worker] for each change."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(READY, timeout=120_000)
    out = []
    for i in range(n):
        tag, prop, value = CHANGES[i % len(CHANGES)]
        before = page.evaluate("window.prefixLab.timings.changes.length")
        page.evaluate("""([tag, prop, value]) => {
            const doc = Bokeh.documents[0];
            const model = [...doc.all_models].find(m => (m.tags || []).includes(tag));
            window.__t0 = performance.now();
            model[prop] = value;
        }""", [tag, prop, value])
        page.wait_for_function(f"window.prefixLab.timings.changes.length > {before} && {READY}", timeout=60_000)
        out.append(page.evaluate("[window.prefixLab.timings.changes.at(-1).applied - window.__t0,"
                                 " window.prefixLab.timings.changes.at(-1).computeMs]"))
    context.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=3, help="cold loads (default 3)")
    parser.add_argument("--changes", type=int, default=50, help="control changes (default 50)")
    parser.add_argument("--site", type=Path, help="site folder (default: a fresh build in a temp folder)")
    args = parser.parse_args()
    site = args.site or Path(tempfile.mkdtemp(prefix="prefix-lab-bench-")) / "site"
    proc, url = serve_site(site)
    try:
        with sync_playwright() as p:
            browser = launch(p)
            loads = [cold_load(browser, url) for _ in range(args.loads)]
            print(f"cold load, median of {args.loads}:")
            for key, label, unit in (("bytes", "transferred", "bytes"), ("requests", "requests", ""),
                                     ("first", "first numbers on screen", "ms"), ("charts", "charts drawn", "ms"),
                                     ("boot", "Pyodide + wheel boot (worker)", "ms"), ("ready", "ready", "ms")):
                value = statistics.median(load[key] for load in loads)
                shown = f"{value / 1e6:.2f} MB" if key == "bytes" else f"{value:.0f} {unit}".strip()
                print(f"  {label:32s} {shown}")
            pairs = change_latencies(browser, url, args.changes)
            print(f"control change to updated charts, {len(pairs)} changes:")
            for label, values in (("total", [t for t, _ in pairs]), ("Python in the worker", [c for _, c in pairs])):
                values.sort()
                p95 = values[max(0, int(round(0.95 * len(values))) - 1)]
                print(f"  {label:22s} median {statistics.median(values):.0f} ms, p95 {p95:.0f} ms, max {values[-1]:.0f} ms")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"(benchmark took {time.perf_counter() - started:.0f} s)")
