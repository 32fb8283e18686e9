"""The sweep on docs/traffic.md, timed on every local core and on a local Dask cluster, and its plot as docs/sweep.png.

    python bench/bench_sweep.py [--no-dask] [--no-screenshot]

The sweep: the public conversation trace (12,031 requests) on 2 to 12
replicas, three routers, GPUs prefilling 50,000 tokens a second with 256 GB
of prefix memory each, and the cheapest setup keeping TTFT p99 under 2 s.
It runs once with `prefix-lab sweep` on local processes and once with
`--scheduler` on a `dask.distributed.LocalCluster` (two worker processes);
the two JSON outputs must be identical. The plot is rendered in headless
Chromium (support.browser) and saved as a PNG.
"""

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

from lab.cli.main import main as cli

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT.parent / "shared" / "traces" / "conversation_trace.jsonl"
ARGS = ["sweep", "--traffic", str(TRACE), "--grid", "fleet.replicas=2:12",
        "--grid", "router.kind=cache_aware,least_loaded,round_robin",
        "--set", "fleet.prefill_tokens_per_s=50000", "--set", "fleet.memory_gb=256",
        "--target", "ttft_p99_ms<=2000", "--quiet"]


def sweep(extra: list[str]) -> tuple[float, str]:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        assert cli(ARGS + extra) == 0
    return time.perf_counter() - start, out.getvalue()


def screenshot(html: Path, png: Path) -> None:
    import sys

    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the browser harness
    from support.browser import launch

    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 900, "height": 400})
        page.goto(html.as_uri())
        page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=30_000)
        page.wait_for_timeout(1000)  # the canvases draw after the document is ready
        page.screenshot(path=str(png), full_page=True)
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-dask", action="store_true", help="skip the run on a local Dask cluster")
    parser.add_argument("--no-screenshot", action="store_true", help="do not write docs/sweep.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        local_json, html = Path(folder) / "local.json", Path(folder) / "sweep.html"
        seconds, table = sweep(["--json-out", str(local_json), "--plot", str(html)])
        print(table, end="")
        print(f"local processes: {seconds:.1f} s for {len(json.loads(local_json.read_text())['rows'])} replays")
        if not args.no_dask:
            from dask.distributed import LocalCluster

            dask_json = Path(folder) / "dask.json"
            with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
                seconds, _ = sweep(["--json-out", str(dask_json), "--scheduler", cluster.scheduler_address])
            same = json.loads(dask_json.read_text()) == json.loads(local_json.read_text())
            print(f"Dask LocalCluster, 2 workers: {seconds:.1f} s; same JSON as local: {same}")
            assert same
        if not args.no_screenshot:
            screenshot(html, ROOT / "docs" / "sweep.png")
            print(f"wrote {ROOT / 'docs' / 'sweep.png'}")


if __name__ == "__main__":
    main()
