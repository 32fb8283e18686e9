"""What the drawn radix tree costs per change, in CPython (the browser runs the same code under Pyodide,
a few times slower).

    python bench/bench_tree.py [--repeat N]

For each scenario it prints, in milliseconds (median of N, CPU time of this process):
- `simulate`: the fleet's run, for scale;
- `tree_at end`: re-running the scenario to the end and describing every replica's tree;
- `tree figure`: the figure's columns and caption for a moment not seen before (a `tree_at` plus the icicle);
- `time change`: `lab.page.view.handle` for one move of the time slider to a new moment, the whole answer
  (the fleet's run is reused; the tree re-runs the scenario up to that moment);
- `replica change`: the same for a change of replica at a moment already drawn (nothing re-runs);
- `setup change`: a control change the simulation reads (the fleet's run and the tree's, both new) against the
  same change with the tree's figure left out of the embed.
"""

import argparse
import statistics
import time
from collections.abc import Callable

import lab.page.view as view
from lab.page.figures import FIGURES, Context
from lab.page.store import STORE  # noqa: E402
from lab.page.urlstate import write_hash
from model import Scenario, simulate, tree_at

SCENARIOS = {
    "default": {},
    "surge, 8 replicas, cache_aware": {"fleet.replicas": "8", "router.kind": "cache_aware", "events": "surge@60+60"},
    "40 prompts, 8 sessions/s, 40 GB": {"traffic.system_prompts": "40", "traffic.session_rate": "8",
                                        "fleet.memory_gb": "40"},
    "serving: default": {"fleet.decode": "true"},
}


def cpu_ms(act: Callable[[int], object], repeat: int) -> float:
    times = []
    for k in range(repeat):
        start = time.process_time()
        act(k)
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def forget() -> None:
    STORE.runs.clear()  # a cold start for each measurement
    STORE.trees.clear()


def row(name: str, s: Scenario, n: int) -> str:
    """The line of figures for one scenario."""
    result = simulate(s)
    nodes = len(tree_at(s)[0].nodes)
    sim = cpu_ms(lambda k: simulate(s), n)
    whole = cpu_ms(lambda k: tree_at(s), n)
    tree = FIGURES["tree"]

    def figure(k: int) -> None:
        c = Context(s, result, view.run, {"tree_at": str(10 + 7 * k)})
        tree.data(c)
        tree.caption(c)
    fig = cpu_ms(figure, n)
    base = write_hash(s, {})
    view.handle({"hash": base})
    moved = cpu_ms(lambda k: view.handle({"hash": base, "controls": {"tree:at": 11.0 + 7 * k}}), n)
    view.handle({"hash": base, "controls": {"tree:at": 30.0}})
    at30 = write_hash(s, {"tree_at": "30"})
    swapped = cpu_ms(lambda k: view.handle({"hash": at30, "controls": {"tree:replica": f"replica {k % 2}"}}), n)
    seeds = [str(1000 + k) for k in range(n)]

    def setup(k: int, embed: dict | None = None) -> None:
        forget()
        view.handle({"hash": base, "controls": {"ctl:seed": seeds[k]}, "embed": embed})
    both = cpu_ms(setup, n)
    without = cpu_ms(lambda k: setup(k, {"figure": "headline,ttft,hit,load,memory,dist"}), n)
    return (f"{name:34s} {nodes:6d} {sim:9.1f} {whole:12.1f} {fig:12.1f} {moved:12.1f} {swapped:15.1f} "
            f"{both:13.1f} {without:9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="runs per figure (default 9)")
    args = parser.parse_args()
    n = args.repeat
    print(f"CPU ms, median of {n}")
    print(f"{'scenario':34s} {'nodes':>6s} {'simulate':>9s} {'tree_at end':>12s} {'tree figure':>12s} "
          f"{'time change':>12s} {'replica change':>15s} {'setup change':>13s} {'w/o tree':>9s}")
    for name, text in SCENARIOS.items():
        print(row(name, Scenario().with_text(text), n))

if __name__ == "__main__":
    main()
