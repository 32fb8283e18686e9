"""Every router on the lab's default traffic at 1 GB of prefix memory per replica, with the exact and the approximate view
(a router with an index of its own, sglang, once).

    python bench/router_table.py [--set key=value ...]

Prints a Markdown table (the table on docs/routers.md is this output): hit rate,
TTFT p50 and p99, prefill GPU-seconds and, for the approximate view, the
share of the tokens the router believed cached that were not there.
"""

import argparse

from model import ROUTERS, Scenario, simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change the base scenario")
    args = parser.parse_args()
    base = Scenario().with_text({"fleet.memory_gb": "1", **dict(s.split("=", 1) for s in args.set)})
    print("| router | view | hit rate | TTFT p50 | TTFT p99 | prefill GPU-s | believed but gone |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for kind, cls in ROUTERS.items():
        own = getattr(cls, "own_view", False)  # keeps its own index whatever router.view says
        for view in ("its own tree",) if own else ("exact", "approximate"):
            r = simulate(base.with_text({"router.kind": kind} if own else {"router.kind": kind, "router.view": view}))
            gone = f"{r.router_overestimate:.1%}" if view != "exact" else "–"
            print(f"| {cls.label} | {view} | {r.hit_rate:.1%} | {r.ttft_p50_ms:,.0f} ms | {r.ttft_p99_ms:,.0f} ms "
                  f"| {r.prefill_gpu_s:,.1f} | {gone} |")


if __name__ == "__main__":
    main()
