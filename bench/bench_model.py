"""How fast the model runs: milliseconds per scenario and simulated requests per second.

    python bench/bench_model.py [--repeat N]

Scenarios: the lab's default; the default with eight cache-aware replicas
(the costliest router, since it looks into every tree); a heavy one
(16 replicas, 30 minutes, a tenant surge, cache-aware); and the default and
the heavy one again in serving mode (`fleet.decode=true`: batched decode
under one KV budget, sessions that wait for their answers); and agent
traffic (fan-outs; heavier runs with the cost router fetching over RDMA;
fan-outs in serving mode). Prints the
median and best of N runs of `model.simulate`, wall clock and CPU time of
this process (on a shared machine the CPU time is the steadier figure).
"""

import argparse
import platform
import statistics
import time

from model import Scenario, simulate

HEAVY = {"fleet.replicas": "16", "router.kind": "cache_aware", "duration_s": "1800", "events": "surge@600+300"}
SCENARIOS = {
    "default": {},
    "default, 8 replicas, cache_aware": {"fleet.replicas": "8", "router.kind": "cache_aware"},
    "heavy: 16 replicas, 30 min, surge": HEAVY,
    "serving: default": {"fleet.decode": "true"},
    "serving: heavy": {**HEAVY, "fleet.decode": "true"},
    "agents: fan-outs of 8, 16 GB": {"traffic.kind": "agent", "traffic.agent_fanout": "8", "fleet.memory_gb": "16",
                                     "router.kind": "cache_aware"},
    "agents: 0.3 runs/s, cost, RDMA fetch": {"traffic.kind": "agent", "traffic.agent_rate": "0.3",
                                             "hardware.preset": "article_14b_h100", "fleet.memory_gb": "24",
                                             "router.kind": "cost", "fleet.fetch": "rdma"},
    "agents: serving, fan-outs of 8": {"traffic.kind": "agent", "traffic.agent_fanout": "8", "fleet.memory_gb": "16",
                                       "fleet.decode": "true", "router.kind": "cache_aware"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs per scenario (default 15)")
    args = parser.parse_args()
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), {args.repeat} runs each")
    print(f"{'scenario':38s} {'requests':>8s} {'median ms':>10s} {'best ms':>8s} {'cpu ms':>7s} {'requests/s':>11s}")
    for name, text in SCENARIOS.items():
        scenario = Scenario().with_text(text)
        repeat = args.repeat if "heavy" not in name else max(3, args.repeat // 5)
        times, cpu, requests = [], [], 0
        for _ in range(repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            requests = simulate(scenario).requests
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        median = statistics.median(times)
        print(f"{name:38s} {requests:8d} {median * 1000:10.1f} {min(times) * 1000:8.1f} "
              f"{statistics.median(cpu) * 1000:7.1f} {requests / median:11.0f}")


if __name__ == "__main__":
    main()
