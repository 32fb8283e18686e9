"""How fast a trace replays, and how memory grows with the number of requests.

    python bench/bench_replay.py [--repeat N]

1. The public conversation trace (12,031 requests, ../shared/traces) on 8
   cache-aware replicas, with the default 4 GB of prefix memory per replica and
   with no limit: the whole `prefix-lab replay` path (the file read twice as a
   stream, checked, simulated), median and best of N, wall clock and CPU time.
2. A 100,000-request trace made by tiling the synthetic trace (3,993 requests)
   end to end, each copy's timestamps shifted past the one before (block ids
   kept: later copies resend the same prompts), written to a temporary folder.
   Replayed the same way in a fresh process for the first 25,000, 50,000 and
   100,000 requests, each reporting its peak memory (max RSS): the growth per
   request is the slope between them. With `--heap`, the peak of Python's own
   heap too (tracemalloc: exact, but it slows the runs about tenfold).
"""

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from model import Scenario, replay

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
CONVERSATION = TRACES / "conversation_trace.jsonl"
SYNTHETIC = TRACES / "synthetic_trace.jsonl"
FLEET = {"fleet.replicas": "8", "router.kind": "cache_aware"}
TILED = 100_000
PREFIXES = (25_000, 50_000, 100_000)


def chunks(path: Path, limit: int | None = None):
    """A function giving the file's chunks (or its first `limit` lines) afresh on each call."""
    def read():
        with open(path, "rb") as f:
            if limit is None:
                while chunk := f.read(1 << 20):
                    yield chunk
            else:
                for n, line in enumerate(f):
                    if n == limit:
                        return
                    yield line
    return read


def timed(scenario: Scenario, path: Path, repeat: int) -> tuple[list[float], list[float], object]:
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = replay(scenario, chunks(path))
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return walls, cpus, result


def tile(out: Path) -> None:
    """The synthetic trace, copy after copy, until TILED requests."""
    rows = [json.loads(line) for line in SYNTHETIC.read_text().splitlines()]
    span = rows[-1]["timestamp"] + 1000
    with open(out, "w") as f:
        for n in range(TILED):
            copy, row = divmod(n, len(rows))
            f.write(json.dumps({**rows[row], "timestamp": rows[row]["timestamp"] + copy * span}) + "\n")


def child(path: str, limit: int, heap: bool) -> None:
    """Replay the first `limit` requests; print requests, seconds, CPU seconds, peak RSS in KB (and heap peak)."""
    if heap:
        tracemalloc.start()
    scenario = Scenario().with_text(FLEET)
    wall, cpu = time.perf_counter(), time.process_time()
    result = replay(scenario, chunks(Path(path), limit))
    print(json.dumps({"requests": result.requests, "wall": time.perf_counter() - wall,
                      "cpu": time.process_time() - cpu, "hit_rate": result.hit_rate,
                      "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "heap_peak": tracemalloc.get_traced_memory()[1] if heap else None}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of the conversation trace (default 5)")
    parser.add_argument("--heap", action="store_true", help="also measure Python's heap peak (slow)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]), args.heap)

    print(f"Python {platform.python_version()} ({platform.python_implementation()})")
    print(f"{'conversation trace, 8 cache-aware replicas':46s} {'requests':>8s} {'hit rate':>8s} "
          f"{'median s':>9s} {'best s':>7s} {'best CPU s':>10s}")
    for memory in ("4", "none"):
        walls, cpus, result = timed(Scenario().with_text({**FLEET, "fleet.memory_gb": memory}), CONVERSATION,
                                    args.repeat)
        label = "  no memory limit" if memory == "none" else f"  {memory} GB of prefix memory per replica"
        print(f"{label:46s} {result.requests:8,d} {result.hit_rate:8.3f} "
              f"{statistics.median(walls):9.2f} {min(walls):7.2f} {min(cpus):10.2f}")

    with tempfile.TemporaryDirectory() as folder:
        tiled = Path(folder) / "tiled.jsonl"
        tile(tiled)
        print(f"\ntiled synthetic trace ({tiled.stat().st_size / 1e6:.0f} MB), 8 cache-aware replicas, 4 GB each, "
              "one fresh process per run")
        print(f"{'requests':>9s} {'wall s':>7s} {'CPU s':>6s} {'hit rate':>8s} {'peak RSS MB':>11s}")
        peaks = []
        for limit in PREFIXES:
            done = subprocess.run([sys.executable, __file__, "--child", str(tiled), str(limit)]
                                  + ["--heap"] * args.heap, check=True, capture_output=True, text=True)
            row = json.loads(done.stdout)
            peaks.append((row["requests"], row["max_rss_kb"] * 1024, row["heap_peak"]))
            heap = f"  heap peak {row['heap_peak'] / 1e6:.1f} MB" if args.heap else ""
            print(f"{row['requests']:9,d} {row['wall']:7.2f} {row['cpu']:6.2f} {row['hit_rate']:8.3f} "
                  f"{row['max_rss_kb'] / 1024:11.1f}{heap}")
        (n0, r0, h0), (n1, r1, h1) = peaks[0], peaks[-1]
        print(f"memory growth, {n0:,} to {n1:,} requests: {(r1 - r0) / (n1 - n0):,.0f} bytes per request (peak RSS)"
              + (f", {(h1 - h0) / (n1 - n0):,.0f} (heap peak)" if args.heap else ""))


if __name__ == "__main__":
    main()
