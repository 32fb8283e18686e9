"""A workshop room on one server: many cold loads, then what a reload and a second visit cost.

    python bench/bench_room_loads.py [--people 100] [--at-once 4] [--no-snapshot] [--site DIR]

`--people` browsers with empty caches (a new context each) load the lab from
one `prefix-lab serve`, `--at-once` at a time (a two-core machine cannot run
a hundred Pyodides together; a room of laptops can); each waits for `ready`.
Prints the bytes sent (compressed, as the browsers counted them), and the
time from the first request until the last page was ready. Then one of those
browsers reloads the page and later opens it again in a new tab: with the
assets named by content hash and served immutable, both send only the HTML
(and build.json or the favicon if asked) over the network and take the rest
from the cache. `--no-snapshot` aborts the snapshot request, so the worker
boots normally: fewer bytes, a slower boot.
"""

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the browser harness

from support.browser import CHROMIUM_FLAGS, find_browser, serve_site  # noqa: E402

READY = "document.documentElement.dataset.lab === 'ready'"


class Counter:
    """Bytes and requests that went over the network (cache hits count nothing)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.network = 0

    async def add(self, request) -> None:
        sizes = await request.sizes()
        sent = sizes["responseBodySize"] + sizes["responseHeadersSize"]
        if sent > 0:
            self.bytes += sent
            self.network += 1


async def load(context, url: str, counter: Counter, reload: bool = False, page=None):
    page = page or await context.new_page()
    page.on("requestfinished", lambda r: asyncio.ensure_future(counter.add(r)))
    started = time.perf_counter()
    if reload:
        await page.evaluate("document.documentElement.dataset.lab = 'reloading'")
        await page.reload()
    else:
        await page.goto(url)
    await page.wait_for_function(READY, timeout=300_000)
    await asyncio.sleep(0.2)  # let the last requestfinished events report their sizes
    return page, time.perf_counter() - started


async def room(url: str, people: int, at_once: int, no_snapshot: bool, chromium: str | None) -> None:
    async with async_playwright() as p:
        browser = await p.chromium.launch(headless=True, executable_path=chromium, args=CHROMIUM_FLAGS)
        gate = asyncio.Semaphore(at_once)
        counters = [Counter() for _ in range(people)]
        times: list[float] = []
        contexts = []

        async def person(i: int) -> None:
            async with gate:
                context = await browser.new_context()
                if no_snapshot:
                    await context.route("**/snapshot.*.bin", lambda route: route.abort())
                _, seconds = await load(context, url, counters[i])
                times.append(seconds)
                if i == 0:
                    contexts.append(context)  # kept for the reload
                else:
                    await context.close()

        started = time.perf_counter()
        await asyncio.gather(*(person(i) for i in range(people)))
        wall = time.perf_counter() - started
        sent = sum(c.bytes for c in counters)
        print(f"{people} cold loads, {at_once} at a time, {'without' if no_snapshot else 'with'} the snapshot:")
        print(f"  sent                  {sent / 1e6:8.1f} MB ({sent / people / 1e6:.2f} MB a load, "
              f"{statistics.median(c.network for c in counters):.0f} requests)")
        print(f"  until the last ready  {wall:8.1f} s (a load: median {statistics.median(times):.1f} s, "
              f"max {max(times):.1f} s)")
        context = contexts[0]
        page = context.pages[0]
        again = Counter()
        _, seconds = await load(context, url, again, reload=True, page=page)
        print(f"  a reload              {again.bytes / 1e3:8.1f} kB over {again.network} requests, ready in {seconds:.1f} s")
        later = Counter()
        _, seconds = await load(context, url, later)
        print(f"  a second tab          {later.bytes / 1e3:8.1f} kB over {later.network} requests, ready in {seconds:.1f} s")
        await context.close()
        await browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=100, help="cold loads (default 100)")
    parser.add_argument("--at-once", type=int, default=4, help="loads under way together (default 4)")
    parser.add_argument("--no-snapshot", action="store_true", help="abort the snapshot request (normal boot)")
    parser.add_argument("--site", type=Path, help="site folder (default: a fresh build in a temp folder)")
    args = parser.parse_args()
    site = args.site or Path(tempfile.mkdtemp(prefix="prefix-lab-bench-")) / "site"
    chromium = find_browser()  # before the event loop: it asks Playwright's synchronous API
    proc, url = serve_site(site)
    try:
        asyncio.run(room(url, args.people, args.at_once, args.no_snapshot, chromium))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"(benchmark took {time.perf_counter() - started:.0f} s)")
