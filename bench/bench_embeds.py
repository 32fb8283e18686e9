"""An article with eight embeds, read from top to bottom: bytes, simulators started, time until each is ready.

    python bench/bench_embeds.py [--site DIR ...] [--loads N]

Each `--site` (a built site, served as it is; default: build one into a temporary folder) is served;
an article on another origin (tests/support/embedhost.py) embeds eight figures one below another, each sized by the
height its embed reports. A cold browser context (nothing cached) opens the article through a recording
proxy, which counts every byte the browser receives, a SharedWorker's included; then a reader scrolls to
each embed in turn and waits until it is `ready` before scrolling on. Printed per load:

- bytes: response bodies as sent (compressed), for the whole article;
- simulators: the Pyodide runtimes the frames use (distinct runtime ids their workers report; a site
  built before runtimes were reported has one per frame, each frame booting its own worker);
- memory: the resident memory of every Chromium process this benchmark started, summed (Linux /proc), once
  all eight are ready;
- wasm: how many times pyodide.asm.wasm came over the network (a runtime whose wasm came from the
  browser's cache is not counted there);
- for each embed: ms from opening the article until it was ready, and ms from when it was scrolled into
  view until it was ready (0 when it was ready before).

To compare with the eager embeds of an earlier version, build that version's site and pass both:
`--site /tmp/site-before --site /tmp/site-after`.
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the browser harness

from support.browser import launch  # noqa: E402
from support.embedhost import article_host, article_html, proxied_context, serve_as_built  # noqa: E402

from lab.site.build import build_site  # noqa: E402

READY = "document.documentElement.dataset.lab === 'ready'"
FIGURES = ["headline", "ttft", "hit", "load", "memory", "dist", "crossover", "transfer"]


def chromium_rss_mb() -> float:
    """Resident memory of the Chromium processes descended from this one, in MB (Linux /proc; 0 elsewhere)."""
    parents, rss = {}, {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        parents[int(entry)] = int(fields.get("PPid", "0").strip() or 0)
        if b"chrom" in cmdline.split(b"\0")[0]:
            rss[int(entry)] = int(fields.get("VmRSS", "0 kB").split()[0]) / 1024

    def ours(pid: int) -> bool:
        while pid > 1:
            if pid == os.getpid():
                return True
            pid = parents.get(pid, 0)
        return False

    return sum(mb for pid, mb in rss.items() if ours(pid))


def read_article(browser, site_url: str, article, proxy) -> dict:
    """One cold reading of the eight-embed article."""
    proxy.clear()
    context = proxied_context(browser, proxy, viewport={"width": 800, "height": 900})
    page = context.new_page()
    urls = [f"{site_url}embed.html?figure={name}" for name in FIGURES]
    page.goto(article.put("/eight.html", article_html(urls)))
    frames = [page.locator(f"#embed-{i}").element_handle().content_frame() for i in range(len(urls))]
    shown = []
    for i, frame in enumerate(frames):
        page.locator(f"#embed-{i}").scroll_into_view_if_needed()
        shown.append(page.evaluate("performance.now()"))
        frame.wait_for_function(READY, timeout=180_000, polling=50)
    memory = chromium_rss_mb()
    start = page.evaluate("performance.timeOrigin")
    ready, runtimes = [], set()
    for i, frame in enumerate(frames):
        info = frame.evaluate("""() => ({origin: performance.timeOrigin, ready: window.prefixLab.timings.ready,
                                         runtime: window.prefixLab.runtime || null})""")
        at = info["origin"] + info["ready"] - start
        ready.append((at, max(0.0, at - shown[i])))
        runtimes.add(info["runtime"]["id"] if info["runtime"] else f"frame {i}")
    context.close()
    return {"bytes": sum(f.bytes for f in proxy.fetches), "runtimes": len(runtimes), "memory": memory,
            "wasm": len(proxy.seen("pyodide.asm.wasm")), "ready": ready}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", action="append", type=Path, help="a built site (repeat to compare)")
    parser.add_argument("--loads", type=int, default=3, help="cold readings per site (default 3)")
    args = parser.parse_args()
    sites = args.site or [build_site(Path(tempfile.mkdtemp(prefix="prefix-lab-bench-")) / "site")]
    with sync_playwright() as p:
        browser = launch(p)
        for site in sites:
            with serve_as_built(site) as url, article_host(url.rstrip("/")) as (article, proxy):
                print(f"\n{site}: {len(FIGURES)} embeds ({', '.join(FIGURES)}), {args.loads} cold readings")
                runs = [read_article(browser, url, article, proxy) for _ in range(args.loads)]
            for n, run in enumerate(runs, 1):
                print(f"  reading {n}: {run['bytes'] / 1e6:.1f} MB sent, {run['runtimes']} simulator(s), "
                      f"Chromium resident {run['memory']:.0f} MB, wasm fetched {run['wasm']}x")
            print(f"  {'embed':10s} {'ready after opening, ms':>24s} {'ready after shown, ms':>22s}   (medians)")
            for i, name in enumerate(FIGURES):
                opened = statistics.median(run["ready"][i][0] for run in runs)
                after = statistics.median(run["ready"][i][1] for run in runs)
                print(f"  {name:10s} {opened:24.0f} {after:22.0f}")
        browser.close()


if __name__ == "__main__":
    main()
