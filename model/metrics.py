"""What a run measured: per-request records, totals, per-replica figures, time series.

`hit_rate` is cached prompt tokens over all prompt tokens. `request_hit_rate`
counts requests instead: of the requests that continue a conversation (a
chat's later turns, an agent's later calls, a closed user's later requests:
`turn` > 0), the share that found their prefix, meaning their replica held
every prompt token before the request's own new text (`cached_tokens >=
prompt_tokens - user_tokens`: the history, the answers before, the system
prompt). A conversation's first request is left out, as it has nothing of
its own to find: the system prompt it starts with is shared by all traffic
and soon on every replica, whatever the router. None when no request
continues a conversation (a replayed trace, which says neither turns nor
new text). With dynamic text in a prompt, no request finds it all. TTFT is queue wait
plus prefill: in lab mode decode is not modelled; in serving mode TTFT ends
with the first token, at the end of the step that finishes the prompt.
Percentiles use the nearest-rank method on the exact values, so they are
always one request's real figure. Throughput is requests served over the
longer of the arrival window and the time the last prefill (serving mode:
the last token) ended. `recompute_gpu_s` is the prefill time spent on tokens
that, when the request was routed, another replica held.

Serving mode's figures (None in lab mode): `e2e` is arrival to last token;
`tpot` a request's time per output token after the first,
(e2e - ttft) / (answer_tokens - 1), over requests with two or more;
`stall` a request's longest wait between two of its tokens (a long
prefill that decodes wait for shows here first); `tokens_per_s` answer
tokens over the same span as throughput.
`ttft_slo_met` is the share of requests whose TTFT is at most `slo.ttft_ms`;
`tbt_slo_met` the share of those with a second token whose every wait
between two tokens (their `stall`, the longest) is at most `slo.tbt_ms`:
an answer that freezes once has missed it, however fast the rest came.
The mean (`tpot`) hides such a freeze: one 2-second stall in 200 tokens
adds 10 ms to it. Serving mode only; None in lab mode.
`offered_rps` is requests sent inside the window per second of it;
`configured_rps` the same for the open-loop schedule the traffic settings
describe (lab mode sends exactly that; serving mode's sessions wait for
answers, so a fleet that falls behind is offered less).

Figures are rounded once, here (milliseconds to 0.001, rates to 1e-6), so
every consumer (CLI, page, tests) sees the same numbers.
"""

from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from model.config import Scenario

__all__ = ["BINS", "Headline", "ReplicaStats", "RequestRecord", "Result", "Series", "bin_busy", "headline", "ms",
           "percentile", "ratio", "rounded", "rounded_all", "slo_shares"]

BINS = 60  # time series resolution over the arrival window


class RequestRecord(NamedTuple):
    """One served request, as the CLI's `--requests` lines give it.

    A NamedTuple rather than a frozen dataclass: a run makes thousands, and
    building a tuple costs a fifth of a frozen dataclass's checked setattrs.
    """

    arrival_s: float
    session: int
    turn: int
    system_prompt: int
    replica: int
    prompt_tokens: int
    user_tokens: int
    answer_tokens: int
    cached_tokens: int
    recomputed_tokens: int  # uncached here, but held by another replica at routing
    queue_ms: float
    prefill_ms: float
    ttft_ms: float
    e2e_ms: float | None = None  # arrival to last token (serving mode)
    tpot_ms: float | None = None  # per output token after the first (serving mode, two tokens or more)
    stall_ms: float | None = None  # longest wait between two of its tokens (serving mode, two tokens or more)

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


@dataclass(frozen=True, slots=True)
class ReplicaStats:
    index: int
    requests: int
    hit_rate: float
    utilisation: float  # busy seconds / (the longer of window and makespan)
    prefill_gpu_s: float

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


def per_bin(totals: list[list[int]]) -> tuple[tuple[int, ...], ...]:
    """[replica][bin] counts from running totals sampled at each bin's end."""
    return tuple(tuple(b - a for a, b in zip([0, *row], row)) for row in totals)


@dataclass(frozen=True, slots=True)
class Series:
    """Per-bin figures over the arrival window; a bin with no arrivals has None."""

    bin_s: float
    start_s: tuple[float, ...]
    requests: tuple[int, ...]  # arrivals in the bin
    hit_rate: tuple[float | None, ...]  # over requests arriving in the bin
    ttft_p50_ms: tuple[float | None, ...]
    ttft_p99_ms: tuple[float | None, ...]
    replica_load: tuple[tuple[float, ...], ...]  # [replica][bin]: busy fraction
    replica_backlog_s: tuple[tuple[float, ...], ...]  # [replica][bin]: queued work at bin end
    # [replica][bin] at bin end: KV tokens in use by requests on the replica (tree nodes they lock and, in
    # serving mode, their uncached prompt and generated tokens), and what the prefix cache holds besides
    kv_running_tokens: tuple[tuple[int, ...], ...]
    kv_cached_tokens: tuple[tuple[int, ...], ...]
    # [replica][bin]: the tree's tokens locked by queued and running requests at bin end (lab mode: all of
    # kv_running_tokens), and the tokens evicted from the tree during the bin
    kv_pinned_tokens: tuple[tuple[int, ...], ...]
    evicted_tokens: tuple[tuple[int, ...], ...]
    requests_configured: tuple[int, ...]  # open-loop sends in the bin (serving mode: what the settings ask for)
    tpot_p99_ms: tuple[float | None, ...]  # over requests arriving in the bin (None in lab mode)
    stall_p99_ms: tuple[float | None, ...]  # the same, of each request's longest wait between two tokens

    def to_dict(self) -> dict[str, Any]:
        return {name: _lists(getattr(self, name)) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class Result:
    scenario: Scenario
    requests: int
    hit_rate: float
    ttft_p50_ms: float
    ttft_p95_ms: float
    ttft_p99_ms: float
    ttft_mean_ms: float
    throughput_rps: float
    makespan_s: float  # when the last prefill ended
    prefill_gpu_s: float
    recompute_gpu_s: float
    router_overestimate: float  # share of the cached tokens the router believed in that were not there
    replicas: tuple[ReplicaStats, ...]
    series: Series
    records: tuple[RequestRecord, ...]
    # serving mode's figures; in lab mode None, or what lab mode's model implies
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    e2e_p50_ms: float | None = None
    e2e_p99_ms: float | None = None
    stall_p50_ms: float | None = None  # of each request's longest wait between two tokens
    stall_p99_ms: float | None = None
    tokens_per_s: float | None = None  # answer tokens a second, over the fleet
    offered_rps: float = 0.0  # requests sent inside the window, per second
    configured_rps: float = 0.0  # open-loop requests inside the window, per second
    rejected: int = 0  # requests whose prompt and answer exceed a replica's whole KV budget (not served)
    mode: str = "lab"  # "lab" or "serving"
    hardware: str = "lab"  # the preset the run used
    kv_budget_tokens: int = 0  # KV tokens per replica (fleet.memory_gb): the cache's (lab), running + cached (serving)
    notes: tuple[str, ...] = ()  # what the run changed to make the scenario runnable, in words
    fetched_tokens: int = 0  # prompt tokens replicas moved from a peer instead of recomputing (fleet.fetch)
    fetch_s: float = 0.0  # seconds those moves took (counted in prefill_gpu_s: the replica waits for them)
    request_hit_rate: float | None = None  # share of continuing requests whose replica held their whole prefix
    ttft_slo_met: float | None = None  # serving mode: share of requests whose TTFT is at most slo.ttft_ms
    tbt_slo_met: float | None = None  # serving mode: share of requests with a second token whose longest wait
    # between two tokens (stall) is at most slo.tbt_ms

    SUMMARY = ("requests", "hit_rate", "request_hit_rate", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "ttft_mean_ms",
               "throughput_rps", "makespan_s", "prefill_gpu_s", "recompute_gpu_s", "router_overestimate", "tpot_p50_ms",
               "tpot_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "stall_p50_ms", "stall_p99_ms", "tokens_per_s", "offered_rps",
               "configured_rps", "rejected", "fetched_tokens", "fetch_s", "ttft_slo_met", "tbt_slo_met")

    def summary(self) -> dict[str, Any]:
        """The headline figures only."""
        return {name: getattr(self, name) for name in self.SUMMARY}

    def to_dict(self) -> dict[str, Any]:
        """Everything but the per-request records, JSON-ready."""
        return {
            "scenario": self.scenario.to_dict(),
            **self.summary(),
            "mode": self.mode,
            "hardware": self.hardware,
            "kv_budget_tokens": self.kv_budget_tokens,
            "notes": list(self.notes),
            "replica_count": len(self.replicas),
            "replicas": [r.to_dict() for r in self.replicas],
            "series": self.series.to_dict(),
        }


class Headline:
    """The headline figures gathered one record at a time (`add`), then worked out (`figures`).

    It keeps each request's TTFT (8 bytes, for exact percentiles) and a few sums per replica, not the
    records: a run that streams its records (a long trace) measures the same way in little memory.
    """

    __slots__ = ("requests", "cached", "prompt", "ttfts", "continuing", "found")

    def __init__(self, n_replicas: int) -> None:
        self.requests, self.cached, self.prompt = [0] * n_replicas, [0] * n_replicas, [0] * n_replicas
        self.ttfts = array("d")
        self.continuing = self.found = 0

    def add(self, rec: RequestRecord) -> None:
        i, got, whole = rec.replica, rec.cached_tokens, rec.prompt_tokens
        self.requests[i] += 1
        self.cached[i] += got
        self.prompt[i] += whole
        self.ttfts.append(rec.ttft_ms)
        if rec.turn > 0 and rec.user_tokens >= 0:
            self.continuing += 1
            self.found += got >= whole - rec.user_tokens

    def figures(self, busy_s: list[float], prefill_s: list[float], horizon: float) -> dict[str, Any]:
        """See `headline`."""
        ttfts = sorted(self.ttfts)
        cached, prompt, requests, n = self.cached, self.prompt, self.requests, len(busy_s)
        return {
            "requests": len(ttfts),
            "hit_rate": ratio(sum(cached), sum(prompt)),
            "request_hit_rate": ratio(self.found, self.continuing) if self.continuing else None,
            "ttft_p50_ms": percentile(ttfts, 50),
            "ttft_p95_ms": percentile(ttfts, 95),
            "ttft_p99_ms": percentile(ttfts, 99),
            "ttft_mean_ms": round(sum(ttfts) / len(ttfts), 3) if ttfts else 0.0,
            "throughput_rps": round(len(ttfts) / horizon, 6),
            "replicas": tuple(ReplicaStats(index=i, requests=requests[i], hit_rate=ratio(cached[i], prompt[i]),
                                           utilisation=ratio(busy_s[i], horizon), prefill_gpu_s=round(prefill_s[i], 6))
                              for i in range(n)),
        }


def headline(records: list[RequestRecord], busy_s: list[float], prefill_s: list[float],
             horizon: float) -> dict[str, Any]:
    """What every mode measures the same way from its records: counts, hit rate, TTFT, throughput, per replica.

    `busy_s` and `prefill_s` are each replica's busy seconds and prefill GPU-seconds; `horizon` is
    the longer of the arrival window and the makespan. Keys are `Result` field names.
    """
    gathered = Headline(len(busy_s))
    for rec in records:  # one pass (a run has thousands)
        gathered.add(rec)
    return gathered.figures(busy_s, prefill_s, horizon)


def slo_shares(records: "list[RequestRecord]", ttft_ms: float, tbt_ms: float) -> tuple[float, float | None]:
    """(share of records with TTFT <= ttft_ms, share of those with a second token whose longest gap <= tbt_ms;
    None if none has one)."""
    met = sum(1 for rec in records if rec.ttft_ms <= ttft_ms)
    stalls = [rec.stall_ms for rec in records if rec.stall_ms is not None]
    tbt = ratio(sum(1 for t in stalls if t <= tbt_ms), len(stalls)) if stalls else None
    return ratio(met, len(records)), tbt


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an ascending list; 0.0 if empty."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * q // 100))  # ceil(n * q / 100), at least 1
    return sorted_values[int(rank) - 1]


_SCALES = tuple(10.0 ** d for d in range(10))  # 10**digits, each exact in binary


def rounded(x: float, digits: int) -> float:
    """`round(x, digits)`, to the bit, at about half its cost for 0 <= digits <= 9 (others go to `round`).

    `round` finds the decimal nearest x's exact binary value (ties to even) through a decimal conversion,
    which costs about as much as printing the number. Here `x * 10**digits` is worked out in floating point
    instead. Below 2**52 every half (n + 0.5) is a double, and a correctly rounded product never lands on the
    far side of a double from the exact one: so it is on the same side of every half as the exact product,
    or on the half itself. Off a half, the nearest whole number n is then the same for both, and
    `n / 10**digits` (two exact operands, one correctly rounded division) is the double nearest that
    decimal, which is what `round` returns. A zero is itself. On a half, below 0, too large, not a number
    or not a float, `round` itself answers (tests/model/test_rounded.py compares the two on about a million values).
    `rounded_all` writes the same lines out for a column: keep the two in step.
    """
    if not 0 <= digits <= 9:
        return round(x, digits)
    scale = _SCALES[digits]
    y = x * scale
    if 0.0 < y < 4.5e15 and type(x) is float:  # an int keeps `round`'s int
        # int() floors y + 0.5 as a double: rounding the sum is monotonic and whole numbers are doubles, so the
        # floor is the exact sum's unless the sum lands on a whole number, on or next to a half: `round` then
        n = int(y + 0.5)
        if y + 0.5 != n:
            return n / scale
    elif y == 0.0 and type(x) is float:  # a zero rounds to itself, its sign kept
        return x
    return round(x, digits)


def rounded_all(values: Iterable[float], digits: int) -> list[float]:
    """`[rounded(x, digits) for x in values]`, to the bit, the rounding written out in one loop: a column of
    thousands (the film's, a chart's) pays no call per value, which costs as much as the rounding does."""
    if not 0 <= digits <= 9:
        return [round(x, digits) for x in values]
    scale = _SCALES[digits]
    out: list[float] = []
    put = out.append
    for x in values:  # `rounded`, line for line
        y = x * scale
        if 0.0 < y < 4.5e15 and type(x) is float:
            n = int(y + 0.5)
            if y + 0.5 != n:
                put(n / scale)
                continue
        elif y == 0.0 and type(x) is float:
            put(x)
            continue
        put(round(x, digits))
    return out


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def ratio(part: float, whole: float) -> float:
    return round(part / whole, 6) if whole else 0.0


def bin_busy(spans: list[tuple[float, float]], bin_s: float) -> list[float]:
    """Busy fraction of each bin, from (start, end) spans of busy time."""
    busy = [0.0] * BINS
    for a, b in spans:
        for k in range(int(a / bin_s), min(BINS, int(b / bin_s) + 1)):
            overlap = min(b, (k + 1) * bin_s) - max(a, k * bin_s)
            if overlap > 0:
                busy[k] += overlap
    return [round(min(1.0, x / bin_s), 4) for x in busy]


def _lists(value: Any) -> Any:
    return [_lists(v) for v in value] if isinstance(value, tuple) else value
