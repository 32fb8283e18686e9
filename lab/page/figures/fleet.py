"""The fleet's charts: TTFT and hit rate over time, how busy each replica was, KV memory, the TTFT distribution.

Standard library, `model` only: this runs in the browser too.
"""

import functools
import math
from collections import Counter
from collections.abc import Sequence

from lab.page.figures.base import Context, Figure, bin_mids, replica_name, shaded
from lab.page.figures.fleetview import memory_data, per_result, replica_colour
from model import Result, rounded, rounded_all


def ttft_columns(result: Result) -> dict[str, list]:
    """TTFT p50 and p99 per bin, at each bin's middle (a baseline's too, `lab.page.compare`)."""
    s = result.series  # empty bins are None (null in JSON): the bridge draws them as gaps
    return {"t": bin_mids(result), "p50": list(s.ttft_p50_ms), "p99": list(s.ttft_p99_ms)}


def hit_columns(result: Result) -> dict[str, list]:
    """The hit rate per bin in percent, at each bin's middle."""
    return {"t": bin_mids(result), "hit": [None if h is None else rounded(h * 100, 3) for h in result.series.hit_rate]}


def _ttft_data(c: Context) -> dict[str, dict]:
    return {"src:ttft": {"data": ttft_columns(c.result)}}


def _ttft_caption(c: Context) -> str:
    s = c.result.series
    p50 = [v for v in s.ttft_p50_ms if v is not None]
    p99 = [(v, t) for v, t in zip(s.ttft_p99_ms, bin_mids(c.result)) if v is not None]
    if not (p50 and p99):
        return ""
    worst, when = max(p99)
    return (f"Per {s.bin_s:g}-second bin, TTFT p50 ran from {min(p50):,.0f} to {max(p50):,.0f} ms and "
            f"p99 from {min(v for v, _ in p99):,.0f} to {worst:,.0f} ms (highest around {when:,.0f} s)"
            f"{shaded(c.scenario)}.")


def _hit_data(c: Context) -> dict[str, dict]:
    return {"src:hit": {"data": hit_columns(c.result)}}


def _hit_caption(c: Context) -> str:
    hits = [h for h in c.result.series.hit_rate if h is not None]
    if not hits:
        return ""
    return (f"Per bin, the hit rate ran from {min(hits):.0%} to {max(hits):.0%}; over the whole run it was "
            f"{c.result.hit_rate:.1%}{shaded(c.scenario)}.")


def _load_data(c: Context) -> dict[str, dict]:
    """One cell per replica and bin: how busy the replica was (colour) and the work queued at the bin's end."""
    s = c.result.series
    t, replica, busy, backlog = [], [], [], []
    mids = bin_mids(c.result)
    for i, (loads, queued) in enumerate(zip(s.replica_load, s.replica_backlog_s)):  # a row at a time
        n = min(len(mids), len(loads), len(queued))
        t += mids[:n]
        replica += [replica_name(i)] * n
        busy += rounded_all([(1.0 if 1.0 < load else load) * 100 for load in loads[:n]], 1)  # min(load, 1.0)
        backlog += rounded_all(queued[:n], 3)
    names = [replica_name(i) for i in range(len(s.replica_load))]
    return {"src:load": {"data": {"t": t, "replica": replica, "busy": busy, "backlog": backlog,
                                  "width": [s.bin_s] * len(t)}},
            "src:load_key": {"data": {"replica": names, "color": [replica_colour(i) for i in range(len(names))],
                                      "x": [-s.bin_s * 0.5] * len(names), "width": [s.bin_s * 0.6] * len(names)}},
            "yr:load": {"factors": list(reversed(names))}}


def _load_caption(c: Context) -> str:
    s = c.result.series
    if not s.replica_load or not s.replica_load[0]:
        return ""
    mids = bin_mids(c.result)
    mean = [sum(row) / len(row) for row in s.replica_load]
    hot = max(range(len(mean)), key=mean.__getitem__)
    cold = min(range(len(mean)), key=mean.__getitem__)
    peaks = [(max(row), i, mids[row.index(max(row))]) for i, row in enumerate(s.replica_backlog_s) if row]
    most, replica, when = max(peaks)
    queue = (f" The longest queue was {most:,.1f} s of work, on replica {replica} around {when:,.0f} s."
             if most >= 0.05 else " No replica ever had more than a few milliseconds of work queued.")
    if c.result.mode == "serving":  # queued work is prefill to do; a request may wait longer for KV room first
        waits = sorted(rec.queue_ms for rec in c.result.records)
        if waits:
            queue += (f" That counts prefill work only: a request also waits for room in KV memory before it "
                      f"starts. From arrival to starting, the median request waited {waits[len(waits) // 2] / 1000:,.1f}"
                      f" s and the slowest {waits[-1] / 1000:,.1f} s.")
    return (f"Over the run, replica {hot} was busy {mean[hot]:.0%} of the time and replica {cold} "
            f"{mean[cold]:.0%}; darker cells are busier, and the swatch left of each row is the replica's colour in "
            f"the tree and the table.{queue}")


def _memory_caption(c: Context) -> str:
    s = c.result.series
    running = [sum(col) for col in zip(*s.kv_running_tokens)]
    cached = [sum(col) for col in zip(*s.kv_cached_tokens)]
    pinned = [sum(col) for col in zip(*s.kv_pinned_tokens)]
    evicted = [sum(col) for col in zip(*s.evicted_tokens)]
    if not running:
        return ""
    busiest = max(range(len(evicted)), key=evicted.__getitem__)
    gone = (f" The caches evicted {sum(evicted):,} tokens in all, most in the bin ending at "
            f"{s.start_s[busiest] + s.bin_s:,.0f} s ({evicted[busiest]:,})." if sum(evicted)
            else " Nothing was evicted.")
    return (f"At most {max(running):,} tokens of KV were held by running requests ({max(pinned):,} of them cached "
            f"prefixes pinned by queued and running requests) and {max(cached):,} by the prefix cache besides, "
            f"across the fleet.{gone}")


def histogram(ttfts: Sequence[float]) -> dict:
    """Counts of TTFT in log-spaced bins (ten per decade), from the fastest to the slowest.

    Remembered for the last few lists of values (the chart and the axes' fit each ask for the same run's):
    the dict returned may be shared, so it is never changed.
    """
    return remembered_histograms(tuple(ttfts))


@per_result
def ttft_histogram(result: Result) -> dict:
    """`histogram` of the result's TTFTs, remembered per result (the chart and the axes' fit both ask for it)."""
    return histogram([rec.ttft_ms for rec in result.records])


@functools.lru_cache(maxsize=8)
def remembered_histograms(ttfts: tuple[float, ...]) -> dict:
    if not ttfts:
        return {"left": [], "right": [], "count": [], "share": []}
    lo = math.floor(math.log10(max(min(ttfts), 1.0)) * 10)
    hi = math.floor(math.log10(max(max(ttfts), 1.0)) * 10) + 1
    counts = [0] * (hi - lo)
    floor, log10 = math.floor, math.log10
    # Each value's bin counted first, then clamped once per bin (a few dozen) rather than once per value.
    for b, n in Counter([floor(log10(t if t > 1.0 else 1.0) * 10) for t in ttfts]).items():
        counts[min(hi - lo - 1, max(0, b - lo))] += n
    edges = [rounded(10 ** ((lo + k) / 10), 3) for k in range(hi - lo + 1)]
    return {"left": edges[:-1], "right": edges[1:], "count": counts,
            "share": [rounded(n / len(ttfts) * 100, 3) for n in counts]}


def _dist_caption(c: Context) -> str:
    r = c.result
    if not r.records:
        return ""
    slowest = max(rec.ttft_ms for rec in r.records)
    return (f"Half of the {r.requests:,} requests got a first token within {r.ttft_p50_ms:,.0f} "
            f"ms, 99 in 100 within {r.ttft_p99_ms:,.0f} ms; the slowest waited {slowest:,.0f} ms.")


FIGURES = (
    Figure("ttft", "Time to first token over time", _ttft_data, _ttft_caption),
    Figure("hit", "Prefix cache hit rate over time", _hit_data, _hit_caption),
    Figure("load", "How busy each replica was over time", _load_data, _load_caption),
    Figure("memory", "KV memory of the fleet over time",
           lambda c: {"src:memory": {"data": memory_data(c.result)}}, _memory_caption),
    Figure("dist", "Distribution of time to first token",
           lambda c: {"src:dist": {"data": ttft_histogram(c.result)}}, _dist_caption),
)
