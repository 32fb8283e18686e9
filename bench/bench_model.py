"""How fast the model runs: milliseconds per scenario and simulated requests per second.

    python bench/bench_model.py [--repeat N]

Scenarios: the lab's default; the default with eight cache-aware replicas
(the costliest router, since it looks into every tree); and a heavy one
(16 replicas, 30 minutes, a tenant surge, cache-aware). Prints the median
and best of N runs of `model.simulate`, wall clock, this process only.
"""

import argparse
import platform
import statistics
import time

from model import Scenario, simulate

SCENARIOS = {
    "default": {},
    "default, 8 replicas, cache_aware": {"fleet.replicas": "8", "router.kind": "cache_aware"},
    "heavy: 16 replicas, 30 min, surge": {"fleet.replicas": "16", "router.kind": "cache_aware",
                                          "duration_s": "1800", "events": "surge@600+300"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs per scenario (default 15)")
    args = parser.parse_args()
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), {args.repeat} runs each")
    print(f"{'scenario':38s} {'requests':>8s} {'median ms':>10s} {'best ms':>8s} {'requests/s':>11s}")
    for name, text in SCENARIOS.items():
        scenario = Scenario().with_text(text)
        repeat = args.repeat if "heavy" not in name else max(3, args.repeat // 5)
        times, requests = [], 0
        for _ in range(repeat):
            start = time.perf_counter()
            requests = simulate(scenario).requests
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        print(f"{name:38s} {requests:8d} {median * 1000:10.1f} {min(times) * 1000:8.1f} {requests / median:11.0f}")


if __name__ == "__main__":
    main()
