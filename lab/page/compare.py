"""Compare mode: the current run against a pinned baseline, on axes that hold still.

The baseline is a setup the player pinned (page key `base=<its own hash>`,
so a "before and after" link carries it), or inside a mission its broken
start. Charts draw the baseline's lines faintly behind the current run's;
the headline says what moved ("hit rate +27.0 points, TTFT p99 -310 ms,
prefill -82 GPU-s"). Pinning also locks the charts' y axes at what both runs
need (page key `axes=ttft:2400,memory:310,dist:26`), so a change never
rescales a chart under the player's eyes; "Lock the axes" does the same
without a baseline, and unlocking fits them to the data again, on every
change (they are fixed ranges the view sets, never Bokeh's own fitting).
A locked axis never hides a line without a word: whatever a run or its
baseline plots above the top is marked at the chart's top edge, at its
time (or its bin), the highest labelled with its value (`off_chart`).

Standard library and `model` only: this runs in the browser too.
"""

import html
import math
from collections.abc import Mapping
from typing import Any

from lab.page.figures import hit_columns, ttft_columns, ttft_histogram
from lab.page.figures.fleetview import memory_data
from model import Result

__all__ = ["AXES", "DELTAS", "axes_patches", "base_patches", "bounds", "deltas_html", "off_chart", "read_axes",
           "tops", "write_axes"]

AXES = ("ttft", "memory", "dist")  # charts whose y axis follows the data (the hit rate's is 0-100% always)
DELTAS = (  # summary key, label, unit, scale, decimals: the headline's "what moved"
    ("hit_rate", "hit rate", " points", 100.0, 1),
    ("ttft_p50_ms", "TTFT p50", " ms", 1.0, 0),
    ("ttft_p99_ms", "TTFT p99", " ms", 1.0, 0),
    ("throughput_rps", "throughput", " req/s", 1.0, 2),
    ("prefill_gpu_s", "prefill", " GPU-s", 1.0, 0),
)
HEADROOM = 1.1


def read_axes(text: str | None) -> dict[str, float]:
    """`ttft:2400,memory:310` -> {"ttft": 2400.0, ...}; parts that are not a known chart and a positive number
    are left out."""
    out: dict[str, float] = {}
    for part in (text or "").split(","):
        name, _, value = part.partition(":")
        try:
            number = float(value)
        except ValueError:
            continue
        if name in AXES and math.isfinite(number) and number > 0:
            out[name] = number
    return out


def write_axes(axes: Mapping[str, float]) -> str:
    return ",".join(f"{name}:{axes[name]:g}" for name in AXES if name in axes)


def bounds(*results: Result | None) -> dict[str, float]:
    """The y-axis tops that show every one of `results` (rounded up to two significant figures)."""
    tops = {"ttft": 0.0, "memory": 0.0, "dist": 0.0}
    for r in results:
        if r is None:
            continue
        s = r.series
        tops["ttft"] = max(tops["ttft"], *(v for v in s.ttft_p99_ms if v is not None), 0.0)
        memory = memory_data(r)
        tops["memory"] = max(tops["memory"], *memory["total"], *memory["evicted"], 0.0)
        tops["dist"] = max(tops["dist"], *ttft_histogram(r)["share"], 0.0)
    return {name: _nice(top * HEADROOM) for name, top in tops.items() if top > 0}


def _nice(x: float) -> float:
    """`x` rounded up to two significant figures: 2,347 -> 2,400."""
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / scale - 1e-9) * scale


def tops(locked: Mapping[str, float], fitted: Mapping[str, float]) -> dict[str, float]:
    """Each chart's y top: the locked one, else one fitted to the runs shown (`bounds`)."""
    return {name: locked.get(name, fitted.get(name, 1.0)) for name in AXES}


def axes_patches(top: Mapping[str, float]) -> dict[str, dict]:
    """Each chart's y range, 0 to its top (`tops`)."""
    return {f"yr:{name}": {"start": 0, "end": top[name]} for name in AXES}


OFF_UNITS = {"ttft": "{:,.0f} ms", "memory": "{:,.1f}k tokens", "dist": "{:,.1f}%"}
OFF_EDGE = 0.96  # where a marker sits: just under the top, so the whole triangle shows


def _plotted(name: str, r: Result) -> list[tuple[float, float]]:
    """(x, y) of everything chart `name` plots for `r`, gaps left out."""
    if name == "ttft":
        c = ttft_columns(r)
        return [(t, v) for t, a, b in zip(c["t"], c["p50"], c["p99"]) for v in (a, b) if v is not None]
    if name == "memory":
        m = memory_data(r)
        return [*zip(m["t"], m["total"]), *zip(m["t"], m["pinned"]), *zip(m["mid"], m["evicted"])]
    h = ttft_histogram(r)
    return [(math.sqrt(lo * hi) if lo > 0 else hi, share) for lo, hi, share in zip(h["left"], h["right"], h["share"])]


def off_chart(top: Mapping[str, float], *results: Result | None) -> dict[str, dict]:
    """Markers for what `results` plot above each chart's top (`src:<chart>_over`): one at the top edge for each
    place a value is off the chart, the highest labelled with its value; empty when everything fits."""
    out = {}
    for name in AXES:
        above: dict[float, float] = {}
        for r in results:
            if r is None:
                continue
            for x, y in _plotted(name, r):
                if y > top[name] and y > above.get(x, -math.inf):
                    above[x] = y
        xs = sorted(above)
        highest = max(xs, key=above.__getitem__) if xs else None
        out[f"src:{name}_over"] = {"data": {
            "x": xs, "y": [top[name] * OFF_EDGE] * len(xs),
            "label": [f"above: {OFF_UNITS[name].format(above[x])}" if x == highest else "" for x in xs]}}
    return out


def base_patches(base: Result | None) -> dict[str, dict]:
    """The baseline's faint copies of the charts' lines (empty without a baseline)."""
    if base is None:
        return {"src:ttft_base": {"data": {"t": [], "p50": [], "p99": []}}, "src:hit_base": {"data": {"t": [], "hit": []}},
                "src:memory_base": {"data": {"t": [], "total": []}},
                "src:dist_base": {"data": {"left": [], "right": [], "share": []}}}
    memory = memory_data(base)
    dist = ttft_histogram(base)
    return {
        "src:ttft_base": {"data": ttft_columns(base)},
        "src:hit_base": {"data": hit_columns(base)},
        "src:memory_base": {"data": {"t": memory["t"], "total": memory["total"]}},
        "src:dist_base": {"data": {"left": dist["left"], "right": dist["right"], "share": dist["share"]}},
    }


def deltas_html(now: Mapping[str, Any], base: Mapping[str, Any], what: str) -> str:
    """One line: what moved from the baseline (`what` names it) to this run, each figure signed."""
    parts = []
    for key, label, unit, scale, decimals in DELTAS:
        a, b = now.get(key), base.get(key)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            continue
        change = (a - b) * scale
        shown = f"{abs(change):,.{decimals}f}"
        sign = "±" if float(shown.replace(",", "")) == 0 else ("+" if change > 0 else "−")
        parts.append(f'<span class="delta" data-delta="{key}" data-value="{round(change, 6)}">{label} {sign}'
                     f"{shown}{unit}</span>")
    return f"<strong>Against {html.escape(what)}</strong> (dashed in the charts): " + ", ".join(parts)
