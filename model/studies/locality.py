"""The KV-locality note's comparison, run: round robin, cache-aware and the load-aware fallback, beside its figures.

`locality_comparison(scenario)` runs one scenario (by default the preset
`kv-locality-note`) under four routers and returns a JSON-ready table:

- `round_robin`: takes turns (the note's round robin);
- `cache_aware`: the seed's cache-aware rule, the longest cached prefix
  unless its backlog exceeds the least loaded's by `router.spill_threshold_s`
  (the note's prefix-aware routing);
- `prefix_only`: the longest cached prefix, never spilling (the plain
  prefix-aware routing the note's fallback is measured against);
- `prefix_load_aware`: the longest prefix unless that replica holds more
  than `router.load_multiple` (2) times the median in-flight count (the
  note's load-aware fallback).

Each row has both hit rates (`request_hit_rate`, `hit_rate`), TTFT p50,
p95 and p99, throughput, and the median TTFT of continuing requests that
found their prefix and of those that did not (the note's 18 ms hit, about
500 ms miss). `fallback` sets the fallback against plain prefix-aware
routing as the note does: change of p95 and p99, points of request hit rate.
Pure: it runs the model and nothing else, so the page can draw the same
table (Pyodide) as the command line prints.
"""

from typing import Any

from model.config import Scenario
from model.metrics import Result, percentile
from model.presets import NAMED, scenario_of
from model.run import simulate

__all__ = ["NOTE", "ROUTES", "locality_comparison"]

PRESET = "kv-locality-note"

# What the note reports (seeds/kv-locality-note.txt); None where it gives no figure.
NOTE: dict[str, Any] = {
    "source": NAMED[PRESET].source,
    "round_robin": {"request_hit_rate": 0.125, "ttft_p99_ms": 6800.0, "throughput_rps": 36.3},
    "cache_aware": {"request_hit_rate": 0.975, "ttft_p99_ms": 1000.0, "throughput_rps": 44.4},
    "fallback": {"ttft_p95_change": -0.36, "ttft_p99_change": -0.45, "request_hit_points": -5.0},
    "found_ttft_p50_ms": 18.0,
    "missed_ttft_p50_ms": 500.0,
}

# (row key, label, settings over the scenario's, the note's row it stands beside)
ROUTES: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("round_robin", "Round robin", {"router.kind": "round_robin"}),
    ("cache_aware", "Cache-aware (spills past 1 s)", {"router.kind": "cache_aware"}),
    ("prefix_only", "Prefix-aware, no fallback", {"router.kind": "cache_aware", "router.spill_threshold_s": "off"}),
    ("prefix_load_aware", "Prefix + load fallback (2x median)", {"router.kind": "prefix_load_aware"}),
)


def locality_comparison(scenario: Scenario | None = None) -> dict[str, Any]:
    """Run `scenario` (default: the `kv-locality-note` preset) under each of `ROUTES`; the rows beside the note's."""
    base = scenario_of(PRESET) if scenario is None else scenario
    rows = []
    results: dict[str, Result] = {}
    for key, label, changes in ROUTES:
        result = results[key] = simulate(base.with_text(changes))
        rows.append({"key": key, "label": label, **_figures(result), "note": NOTE.get(key)})
    plain, fallback = results["prefix_only"], results["prefix_load_aware"]
    return {
        "scenario": base.to_text(),
        "users": base.traffic.users if base.traffic.kind == "closed" else None,
        "replicas": base.fleet.replicas,
        "hardware": plain.hardware,
        "notes": list(plain.notes),
        "rows": rows,
        "fallback": {
            "ttft_p95_change": _change(fallback.ttft_p95_ms, plain.ttft_p95_ms),
            "ttft_p99_change": _change(fallback.ttft_p99_ms, plain.ttft_p99_ms),
            "request_hit_points": _points(fallback.request_hit_rate, plain.request_hit_rate),
            "note": NOTE["fallback"],
        },
        "note": NOTE,
    }


def _figures(result: Result) -> dict[str, Any]:
    found: list[float] = []
    missed: list[float] = []
    for rec in result.records:
        if rec.turn > 0 and rec.user_tokens >= 0:
            (found if rec.cached_tokens >= rec.prompt_tokens - rec.user_tokens else missed).append(rec.ttft_ms)
    found.sort()
    missed.sort()
    return {
        "requests": result.requests,
        "request_hit_rate": result.request_hit_rate,
        "hit_rate": result.hit_rate,
        "ttft_p50_ms": result.ttft_p50_ms,
        "ttft_p95_ms": result.ttft_p95_ms,
        "ttft_p99_ms": result.ttft_p99_ms,
        "throughput_rps": result.throughput_rps,
        "found_ttft_p50_ms": percentile(found, 50) if found else None,
        "missed_ttft_p50_ms": percentile(missed, 50) if missed else None,
        "replicas_used": sum(1 for r in result.replicas if r.requests),
    }


def _change(new: float, old: float) -> float | None:
    """Relative change from `old` to `new` (-0.45: 45% lower)."""
    return round(new / old - 1.0, 4) if old else None


def _points(new: float | None, old: float | None) -> float | None:
    """Percentage points from `old` to `new`."""
    return None if new is None or old is None else round((new - old) * 100, 2)
