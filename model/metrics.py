"""What a run measured: per-request records, totals, per-replica figures, time series.

`hit_rate` is cached prompt tokens over all prompt tokens. TTFT is queue wait
plus prefill (decode is not modelled). Percentiles use the nearest-rank
method on the exact values, so they are always one request's real TTFT.
Throughput is requests served over the longer of the arrival window and
the time the last prefill ended. `recompute_gpu_s` is the prefill time
spent on tokens that, when the request was routed, another replica held.

Figures are rounded once, here (milliseconds to 0.001, rates to 1e-6), so
every consumer (CLI, page, tests) sees the same numbers.
"""

from dataclasses import dataclass
from typing import Any, NamedTuple

from .config import Scenario

__all__ = ["BINS", "ReplicaStats", "RequestRecord", "Result", "Series", "percentile"]

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

    SUMMARY = ("requests", "hit_rate", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "ttft_mean_ms",
               "throughput_rps", "makespan_s", "prefill_gpu_s", "recompute_gpu_s", "router_overestimate")

    def summary(self) -> dict[str, Any]:
        """The headline figures only."""
        return {name: getattr(self, name) for name in self.SUMMARY}

    def to_dict(self) -> dict[str, Any]:
        """Everything but the per-request records, JSON-ready."""
        return {
            "scenario": self.scenario.to_dict(),
            **self.summary(),
            "replica_count": len(self.replicas),
            "replicas": [r.to_dict() for r in self.replicas],
            "series": self.series.to_dict(),
        }


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an ascending list; 0.0 if empty."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * q // 100))  # ceil(n * q / 100), at least 1
    return sorted_values[int(rank) - 1]


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def ratio(part: float, whole: float) -> float:
    return round(part / whole, 6) if whole else 0.0


def _lists(value: Any) -> Any:
    return [_lists(v) for v in value] if isinstance(value, tuple) else value
