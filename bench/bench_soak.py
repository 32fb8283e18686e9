"""A long session in one tab: many changes, with memory and latency printed as they go.

    python bench/bench_soak.py [--changes 1000] [--every 100] [--site DIR]

Serves the built site (building it if needed), opens the lab once in headless
Chromium and makes `--changes` control changes through the page's own entry
point (`window.prefixLab.changed`, what every widget calls), cycling through
replicas, routers, the cache switch and the request rate, each waited for
(`data-lab` back at `ready`). Every `--every` changes it prints the page's JS
heap (Chromium's JSHeapUsedSize), the resident memory of Chromium's renderer
processes (the page and its Pyodide worker, from /proc) and the latency from
change to redrawn charts (median and p95) over those changes. Memory that
keeps climbing across the rows is a leak; flat rows are what we want.
"""

import argparse
import itertools
import statistics
import sys
import tempfile
from pathlib import Path

from bench_page import READY
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the browser harness

from support.browser import launch, serve_site  # noqa: E402

CHANGES = [("ctl:fleet.replicas", v) for v in (2, 6, 8, 3)] + \
          [("ctl:router.kind", v) for v in ("cache_aware", "round_robin", "least_loaded")] + \
          [("ctl:fleet.cache", v) for v in (False, True)] + \
          [("ctl:traffic.session_rate", v) for v in (3.0, 1.5, 2.0)]


def renderer_rss_mb() -> float:
    """Resident memory of every Chromium renderer process, in MB (Linux /proc)."""
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if b"--type=renderer" not in cmdline:
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1000, help="control changes to make (default 1000)")
    parser.add_argument("--every", type=int, default=100, help="print a row every this many changes (default 100)")
    parser.add_argument("--site", default=None, help="the site folder to serve (default: a new temporary build)")
    args = parser.parse_args()
    site = Path(args.site) if args.site else Path(tempfile.mkdtemp(prefix="prefix-lab-soak-")) / "site"
    server, url = serve_site(site)
    try:
        soak(url, args)
    finally:
        server.terminate()
        server.wait(timeout=10)


def soak(url: str, args: argparse.Namespace) -> None:
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page()
        page.add_init_script("window.__views = 0; document.addEventListener('prefix-lab:view', () => window.__views++)")
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(url)
        page.wait_for_function(READY, timeout=120_000)
        print(f"{'changes':>8s} {'JS heap MB':>11s} {'renderers MB':>13s} {'median ms':>10s} {'p95 ms':>8s}")
        steps = itertools.cycle(CHANGES)
        for done in range(1, args.changes + 1):
            name, value = next(steps)
            before = page.evaluate("window.__views")  # timings.changes is trimmed in long sessions: count views
            page.evaluate("([n, v]) => window.prefixLab.changed(n, v, 'value')", [name, value])
            page.wait_for_function(f"({READY}) && window.__views > {before}", timeout=60_000)
            if done % args.every == 0:
                recent = page.evaluate(f"window.prefixLab.timings.changes.slice(-{args.every})"
                                       ".map(c => c.applied - c.sent)")
                heap = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}["JSHeapUsedSize"]
                p95 = sorted(recent)[max(0, int(len(recent) * 0.95) - 1)]
                print(f"{done:8d} {heap / 2**20:11.1f} {renderer_rss_mb():13.1f} {statistics.median(recent):10.0f} "
                      f"{p95:8.0f}", flush=True)
        browser.close()


if __name__ == "__main__":
    main()
