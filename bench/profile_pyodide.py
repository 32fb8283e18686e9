"""Where a control change's time goes in the browser's Python: the view code profiled under Pyodide (Node.js).

    python bench/profile_pyodide.py

Times `lab.page.view.handle_json` (what the page's worker calls: the answer as
JSON text) for the default setup, a replicas change, and 16 cache-aware
replicas at 8 sessions a second, in Pyodide (the npm package, under Node:
the same interpreter as the page's worker) and in CPython, each for setups
not computed before (other seeds), for the same setup again, and for other replica
counts on the same seed (a replicas slider dragged: new runs, the traffic already
made), then prints
cProfile's top functions by own time for a new setup under Pyodide (PROFILE_SORT=cumulative
and PROFILE_ROWS=40 in the environment change the order and the length). Each time is
given as wall clock and as CPU time, the steadier figure on a shared machine. Last, a replicas slider
moved one step at a time, without and with answers ahead of time between the steps (`prefetch_json`).
"""

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.page.store import STORE  # noqa: E402
from lab.page.view import handle_json  # noqa: E402
from lab.site.build import _write_wheel, pyodide_dir  # noqa: E402

REQUESTS = [
    ("default setup", {"hash": ""}),
    ("replicas 4 -> 6", {"hash": "", "controls": {"ctl:fleet.replicas": 6}}),
    ("16 cache-aware replicas, 8 sessions/s", {"hash": "fleet.replicas=16&router.kind=cache_aware&traffic.session_rate=8"}),
]


def cpython_ms(requests: list[dict]) -> tuple[float, float]:
    """Median wall and CPU milliseconds of handle_json over the requests."""
    times, cpu = [], []
    for request in requests:
        text = json.dumps(request)
        t0, c0 = time.perf_counter(), time.process_time()
        handle_json(text)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return statistics.median(times), statistics.median(cpu)


def refleeted(request: dict) -> list[dict]:
    """Five other replica counts, nearest first, on the request's seed (a replicas slider dragged): new runs
    of the traffic the request itself sent."""
    n = (request.get("controls") or {}).get("ctl:fleet.replicas")
    if n is None:
        n = int(dict(p.split("=") for p in request["hash"].split("&") if p).get("fleet.replicas", 4))
    counts = sorted((v for v in range(1, 17) if v != n), key=lambda v: (abs(v - n), -v))[:5]
    return [{**request, "controls": {"ctl:fleet.replicas": v}} for v in counts]


def seeded(request: dict, seed: int) -> dict:
    return {**request, "hash": "&".join(filter(None, [request["hash"], f"seed={seed}"]))}


def main() -> None:
    node = shutil.which("node")
    if node is None:
        sys.exit("profile_pyodide: Node.js is needed (the project's setup installs it with npm)")
    with tempfile.TemporaryDirectory() as tmp:
        wheel = Path(tmp) / _write_wheel(Path(tmp) / "wheels")
        requests = Path(tmp) / "requests.json"
        requests.write_text(json.dumps([
            {"label": label, "request": request, "new": [seeded(request, s) for s in range(2, 7)],
             "fleet": refleeted(request), "profiled": seeded(request, 7)} for label, request in REQUESTS]))
        done = subprocess.run([node, str(ROOT / "bench" / "profile_pyodide.mjs"), str(pyodide_dir()), str(wheel),
                               str(requests)], capture_output=True, text=True, timeout=600)
    if done.returncode:
        sys.exit(f"profile_pyodide: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'failed'}")
    for label, request in REQUESTS:
        handle_json(json.dumps(request))
        new, seen = cpython_ms([seeded(request, s) for s in range(2, 7)]), cpython_ms([request] * 5)
        STORE.answers.clear()  # the counts the rows before asked for are new setups here too
        STORE.runs.clear()
        handle_json(json.dumps(request))  # the page's last answer: its traffic is the one the next run sends
        fleet = cpython_ms(refleeted(request))
        print(f"{label}, CPython: a new setup {new[0]:.1f} ms (CPU {new[1]:.1f} ms), the same setup again "
              f"{seen[0]:.1f} ms (CPU {seen[1]:.1f} ms), another replica count on the same seed {fleet[0]:.1f} ms "
              f"(CPU {fleet[1]:.1f} ms) (medians of 5)")
    print(done.stdout)


if __name__ == "__main__":
    main()
