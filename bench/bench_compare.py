"""What compare mode adds to a control change, in CPython and in Pyodide (Node.js, the npm package).

    python bench/bench_compare.py [--changes N]

A change is one view request: the page's hash with one control moved, through
`lab.page.view.handle`, as the worker runs it. Three cases over the same N
changes (the replica slider stepping 2..8 and back, the router alternating):
free play; with a pinned baseline (its run is remembered, so the cost is the
second set of chart data and the deltas); and with a baseline whose run
must be recomputed on every change (the memo emptied first), the worst
case. Whole changes are noisy on a shared machine, so it also times compare
mode's own work alone (the baseline's chart data, the axes' bounds and the
deltas, for a run already made): that is what a baseline adds to a change.
Prints medians and 95th percentiles in milliseconds; the target is under
10 ms in the browser.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab.site.build import _write_wheel, pyodide_dir  # noqa: E402

CASES = r'''
import json, time, statistics
import lab.page.view as view

def changes(n):
    for i in range(n):
        yield {"ctl:fleet.replicas": 2 + (i % 7)} if i % 2 else {"ctl:router.kind": ("cache_aware", "least_loaded")[i % 4 // 2]}

def timed(base, forget, n):
    hash_ = "fleet.replicas=4" + ("&base=fleet.replicas%3D3&axes=ttft:780,memory:110,dist:18" if base else "")
    out = []
    for controls in changes(n):
        if forget:
            STORE.runs.clear()
        t0 = time.perf_counter()
        answer = view.handle({"hash": hash_, "controls": controls})
        out.append((time.perf_counter() - t0) * 1000)
        hash_ = answer["hash"]
    return out

def own_work(n):
    """Only what compare mode computes on a change: the baseline's chart data, the axes' bounds, the deltas."""
    from lab.page import compare
    from model import Scenario
    now = view.run(Scenario().with_text({"fleet.replicas": "4", "router.kind": "cache_aware"}))
    base = view.run(Scenario().with_text({"fleet.replicas": "3"}))
    summary = dict(now.summary(), replica_count=4)
    base_summary = dict(base.summary(), replica_count=3)
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        compare.base_patches(base)
        compare.bounds(now, base)
        compare.deltas_html(summary, base_summary, "the pinned baseline")
        out.append((time.perf_counter() - t0) * 1000)
    return sorted(out)

def run(n):
    timed(True, False, 6)  # warm every path once
    result = {}
    own = own_work(n)
    result["compare's own work"] = [statistics.median(own), own[int(0.95 * (len(own) - 1))]]
    for name, base, forget in (("free play", False, False), ("baseline", True, False),
                               ("baseline, recomputed", True, True)):
        times = sorted(timed(base, forget, n))
        result[name] = [statistics.median(times), times[int(0.95 * (len(times) - 1))]]
    return result
'''

NODE = r'''
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [pyodideDir, wheelPath, code, n] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/` });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
pyodide.runPython(readFileSync(code, "utf8"));
process.stdout.write(pyodide.runPython(`json.dumps(run(${n}))`) + "\n");
'''


def show(where: str, result: dict) -> None:
    free = result["free play"][0]
    for name, (median, p95) in result.items():
        extra = "" if name in ("free play", "compare's own work") else f"   ({median - free:+.1f} ms against free play)"
        print(f"  {where:8s} {name:22s} median {median:6.1f} ms   p95 {p95:6.1f} ms{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=60)
    args = parser.parse_args()
    namespace: dict = {}
    exec(CASES, namespace)  # the same code in both runtimes
    show("CPython", namespace["run"](args.changes))
    node = shutil.which("node")
    if not node:
        print("  Pyodide: skipped (no node on PATH)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        wheel = folder / _write_wheel(folder / "wheels")
        (folder / "cases.py").write_text(CASES)
        (folder / "run.mjs").write_text(NODE)
        done = subprocess.run([node, str(folder / "run.mjs"), str(pyodide_dir()), str(wheel), str(folder / "cases.py"),
                               str(args.changes)], capture_output=True, text=True, timeout=900)
        if done.returncode:
            raise SystemExit(done.stderr[-2000:])
        show("Pyodide", json.loads(done.stdout.strip().splitlines()[-1]))
    print("  target: a baseline adds under 10 ms per change in the browser")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"  ({time.perf_counter() - t0:.0f} s)")
