"""Does the lab boot every time? Cold loads in fresh browser contexts, counted, with their times.

    python bench/bench_loads.py [--loads 10] [--soak 0] [--site DIR]

Each load gets a new context (nothing cached) with the browser tests' rule:
requests to other origins are aborted and counted as failures, as are page
errors and same-origin 404s. A load passes when `data-lab` reaches `ready`
and the headline equals `prefix-lab run --json`. Prints "N of N loads" and
the time to ready. `--soak N` then makes N URL edits on one page (a seeded
walk over replicas, routers, cache and events), each checked the same way.
This is the repeated and long part of the browser tests: the suite loads a
page once per behaviour, this runs it until it stops being lucky.
"""

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_page import READY
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the browser harness

from support.browser import launch, serve_site  # noqa: E402

HEADLINE = ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps", "replica_count")
SETTLED = "['ready', 'error'].includes(document.documentElement.dataset.lab)"
WALK = {"fleet.replicas": ["2", "4", "6", "8"], "router.kind": ["round_robin", "least_loaded", "cache_aware"],
        "fleet.cache": ["true", "false"], "events": ["", "surge@60+60", "burst@30+20x3", "timestamp@100"]}


def expected(fragment: str) -> dict:
    """The headline data-values `prefix-lab run --json` gives for a hash of `key=value` pairs."""
    argv = [sys.executable, "-m", "lab", "run", "--json"]
    for pair in filter(None, fragment.split("&")):
        argv += ["--set", pair]
    data = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    return {key: json.dumps(data[key]) for key in HEADLINE}


def headline(page) -> dict:
    return page.evaluate("Object.fromEntries([...document.querySelectorAll('[data-metric]')]"
                         ".map(e => [e.dataset.metric, e.dataset.value]))")


def guarded_page(browser, origin: str):
    """A page in a new context, and the list its forbidden requests, errors and 404s go to."""
    context = browser.new_context()
    problems: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith(origin + "/") or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            problems.append(f"foreign request {url}")
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda e: problems.append(f"page error {e}"))
    page.on("console", lambda m: problems.append(f"console error {m.text}") if m.type == "error" else None)
    page.on("response", lambda r: problems.append(f"404 {r.url}") if r.status == 404 else None)
    return context, page, problems


def load_once(browser, url: str, want: dict) -> tuple[bool, float, list[str]]:
    context, page, problems = guarded_page(browser, url.rstrip("/"))
    started = time.perf_counter()
    try:
        page.goto(url)
        page.wait_for_function(SETTLED, timeout=120_000)
        seconds = time.perf_counter() - started
        state = page.evaluate("document.documentElement.dataset.lab")
        if state != "ready":
            problems.append(f"data-lab is {state!r}: {page.locator('#status').inner_text()}")
        elif headline(page) != want:
            problems.append(f"headline {headline(page)} is not the CLI's {want}")
    except Exception as exc:  # a timeout is a failed load, not the end of the benchmark
        seconds = time.perf_counter() - started
        problems.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    finally:
        context.close()
    return not problems, seconds, problems


def soak(browser, url: str, n: int, seed: int = 1) -> tuple[int, list[float], list[str]]:
    """`n` URL edits on one page; returns how many passed, seconds per edit and what went wrong."""
    rng = random.Random(seed)
    context, page, problems = guarded_page(browser, url.rstrip("/"))
    page.add_init_script("window.__views = 0; document.addEventListener('prefix-lab:view', () => window.__views++);")
    page.goto(url)
    page.wait_for_function(READY, timeout=120_000)
    passes, times, cache, current = 0, [], {}, ""
    for i in range(n):
        pairs = {key: rng.choice(values) for key, values in WALK.items()}
        fragment = "&".join(f"{k}={v}" for k, v in pairs.items() if v)
        if fragment not in cache:
            cache[fragment] = expected(fragment)
        before = len(problems)
        started = time.perf_counter()
        if fragment != current:  # an unchanged hash is no edit: the page has nothing to answer
            views = page.evaluate("f => { const n = window.__views; location.hash = f; return n; }", fragment)
            page.wait_for_function(f"window.__views > {views} && {READY}", timeout=60_000)
            current = fragment
        times.append(time.perf_counter() - started)
        if headline(page) != cache[fragment]:
            problems.append(f"edit {i} #{fragment}: {headline(page)} is not the CLI's {cache[fragment]}")
        passes += len(problems) == before
    context.close()
    return passes, times, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=10, help="cold loads (default 10)")
    parser.add_argument("--soak", type=int, default=0, help="URL edits on one page afterwards (default 0)")
    parser.add_argument("--site", type=Path, help="site folder (default: a fresh build in a temp folder)")
    args = parser.parse_args()
    site = args.site or Path(tempfile.mkdtemp(prefix="prefix-lab-bench-")) / "site"
    proc, url = serve_site(site)
    failed = False
    try:
        with sync_playwright() as p:
            browser = launch(p)
            want = expected("")
            results = [load_once(browser, url, want) for _ in range(args.loads)]
            passed = sum(ok for ok, _, _ in results)
            seconds = sorted(s for _, s, _ in results)
            print(f"{passed} of {args.loads} loads reached ready with the CLI's numbers")
            print(f"  time to settle: median {statistics.median(seconds):.2f} s, max {seconds[-1]:.2f} s")
            for i, (_, _, problems) in enumerate(results):
                for problem in problems[:3]:
                    print(f"  load {i + 1}: {problem}")
            failed = passed < args.loads
            if args.soak:
                passes, times, problems = soak(browser, url, args.soak)
                times.sort()
                print(f"{passes} of {args.soak} URL edits on one page showed the CLI's numbers")
                print(f"  per edit: median {statistics.median(times) * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms")
                for problem in problems[:10]:
                    print(f"  {problem}")
                failed = failed or passes < args.soak
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    started = time.perf_counter()
    try:
        main()
    finally:
        print(f"(benchmark took {time.perf_counter() - started:.0f} s)")
