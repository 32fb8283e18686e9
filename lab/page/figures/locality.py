"""The KV-locality note's measurement, reproduced on the lab's traffic.

Standard library, `model` only: this runs in the browser too.
"""

import functools
from typing import Any

from lab.page.figures.base import Context, Figure, percent
from model import locality_comparison


@functools.cache
def _locality() -> dict[str, Any]:
    return locality_comparison()


def _locality_data(c: Context) -> dict[str, dict]:
    """Each router's share of requests that found their prefix, the lab's beside the note's (where it gives one)."""
    rows = _locality()["rows"]
    return {"src:locality": {"data": {
        "router": [r["label"] for r in rows], "lab": [percent(r["request_hit_rate"]) for r in rows],
        "note": [percent((r["note"] or {}).get("request_hit_rate")) for r in rows], "zero": [0.0] * len(rows),
        "tokens": [percent(r["hit_rate"]) for r in rows],
        "p99": [r["ttft_p99_ms"] for r in rows], "rps": [r["throughput_rps"] for r in rows]}}}


def _locality_caption(c: Context) -> str:
    table = _locality()
    rows = {r["key"]: r for r in table["rows"]}
    parts = []
    for key in ("round_robin", "cache_aware"):
        r, note = rows[key], rows[key]["note"]
        parts.append(f"{r['label']}: {r['request_hit_rate']:.1%} of requests found their prefix (the note: "
                     f"{note['request_hit_rate']:.1%}) and {r['hit_rate']:.1%} of prompt tokens were cached, p99 "
                     f"{r['ttft_p99_ms']:,.0f} ms ({note['ttft_p99_ms']:,.0f}), {r['throughput_rps']:.1f} requests a "
                     f"second ({note['throughput_rps']:g})")
    fallback = table["fallback"]
    return ("The KV-locality note's stress test replayed here (30 users, CodeLlama 13B on 8 A100s). "
            + "; ".join(parts) + f". The load-aware fallback changes p99 by {fallback['ttft_p99_change']:+.0%} "
            f"against prefix-aware routing without one (the note: {fallback['note']['ttft_p99_change']:+.0%}). "
            "Throughput is about a tenth of the note's: the lab's answers are longer and every user waits for one.")


FIGURES = (
    Figure("locality", "A published measurement, reproduced", _locality_data, _locality_caption, fleet=False,
           constant=True),
)
