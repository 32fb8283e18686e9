"""A mission on replayed traffic: the fewest replicas that keep a real trace's p99 under a target.

Ten minutes of Mooncake's public conversation trace (its first `REQUESTS`
lines) replayed on GPUs five times faster than the lab's, with 256 GB of
prefix memory per replica, both fixed. The player changes the replicas and
the router. Thresholds were found by running the model (`prefix-lab sweep
--traffic` over every router and 3 to 16 replicas): round robin, random,
least-loaded and power-of-two stay above the target even with sixteen
replicas; routers that follow the cache reach it with four.

It waits here, tested (tests/test_tracemission.py), until the missions
catalog can say where a mission's traffic comes from; see `MISSION`.
"""

import itertools
from collections.abc import Callable, Iterable
from typing import Any

from missions import Mission, Threshold, score
from model import Result, Scenario, replay

__all__ = ["MISSION", "ONE_STAR", "REQUESTS", "THREE_STARS", "TRACE", "play"]

TRACE = "conversation_trace.jsonl"  # in ../shared/traces beside the project
REQUESTS = 1750  # its first ten minutes

MISSION = Mission(
    id="real-traffic",
    title="Real traffic, fewest replicas",
    brief=("Ten minutes of a real chat service: 1,750 requests from Mooncake's public conversation trace, "
           "8,000 tokens at the median and up to 123,000, most of them a conversation sent again with one "
           "more turn. Eight replicas take turns; each has 256 GB of prefix memory and prefills 50,000 "
           "tokens a second. The slowest one request in a hundred still waits more than two seconds."),
    lesson=("A conversation's history sits on the replica that served its last turn. Routers that follow "
            "the cache send the next turn there and skip a quarter of all prompt tokens; routers that only "
            "balance load recompute them, and even sixteen such replicas miss the target that four "
            "cache-aware ones meet."),
    start=Scenario().with_text({"router.kind": "round_robin", "fleet.replicas": "8", "fleet.memory_gb": "256",
                                "fleet.prefill_tokens_per_s": "50000"}),
    controls=("fleet.replicas", "router.kind", "router.spill_threshold_s"),
    goal=(Threshold("ttft_p99_ms", "<=", 1950),),
    two_stars=(Threshold("replicas", "<=", 6),),
    three_stars=(Threshold("replicas", "<=", 4),),
)
ONE_STAR = {"router.kind": "cache_aware"}  # changes to the start, as dotted keys
THREE_STARS = {"router.kind": "cache_aware", "fleet.replicas": "4"}


def play(scenario: Scenario, lines: Callable[[], Iterable[bytes]]) -> tuple[Result, Any]:
    """Replay the mission's traffic on `scenario` and score it (a `missions` verdict); `lines()` gives the trace's lines afresh."""
    result = replay(scenario, lambda: itertools.islice(lines(), REQUESTS))
    return result, score(MISSION, scenario, result)
