"""Every mission's sweep from a cold cache: how long it takes, how many setups each mission has, and its size.

    python bench/bench_mission_sweep.py [--workers N] [--check]

Sweeps all missions as `prefix-lab build` does (lab/site/missionsweep.py, one
process per core unless --workers), into an empty cache folder so nothing is
reused; then reads them again from that cache and times that too. Prints the
setups and seconds of each mission (its share of the run measured alone, in
one process), the whole sweep's wall time, and the size of the site's file
raw and gzipped. --check also sweeps every mission again in this process
(missions.sweep.sweep, no worker processes) and fails unless both agree
exactly.
"""

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from functools import partial

from lab.common.tracemission import run_mission
from lab.site import missionsweep
from missions import MISSIONS
from missions.sweep import sweep


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, help="worker processes (default: one per core)")
    p.add_argument("--check", action="store_true", help="also sweep in one process and compare")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache
        cpu = os.cpu_count()
        print(f"{len(MISSIONS)} missions, {sum(len(m.setups()) for m in MISSIONS)} setups, "
              f"{args.workers or cpu} worker process(es) on {cpu} core(s); load average {os.getloadavg()[0]:.2f}")
        start = time.perf_counter()
        cold = missionsweep.distributions(workers=args.workers)
        swept_s = time.perf_counter() - start
        start = time.perf_counter()
        warm = missionsweep.distributions(workers=args.workers)
        cached_s = time.perf_counter() - start
        assert warm == cold, "the cache gave back something else than was swept"
        raw = json.dumps(cold, separators=(",", ":")).encode()
        print(f"whole sweep, cold cache: {swept_s:.1f} s wall; read back from the cache: {cached_s * 1000:.0f} ms")
        print(f"{missionsweep.SITE_FILE}: {len(raw) / 1000:.1f} KB, {len(gzip.compress(raw, 9)) / 1000:.1f} KB gzipped")
        for why in cold["missing"].values():
            print(f"not swept: {why}")
        print(f"{'mission':<18s} {'setups':>6s} {'one process s':>14s} {'pareto':>7s}  trade-off")
        fresh = {}
        for m in MISSIONS:
            dist = next((d for d in cold["missions"] if d["id"] == m.id), None)
            if dist is None:
                continue
            t = time.perf_counter()
            if args.check:
                fresh[m.id] = sweep(m, partial(run_mission, m))
            else:
                missionsweep.sweep_points([m], workers=1)
            print(f"{m.id:<18s} {len(dist['setups']):>6d} {time.perf_counter() - t:>14.2f} {len(dist['pareto']):>7d}"
                  f"  {' against '.join(m.tradeoff)}")
        if args.check:
            differ = [d["id"] for d in cold["missions"] if fresh[d["id"]] != d]
            print("one process and the worker processes agree exactly" if not differ else f"DIFFER: {differ}")
            return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
