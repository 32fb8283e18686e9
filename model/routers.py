"""Routers: each picks a replica for a request from the same view of the fleet.

Every router has `choose(request, replicas, now) -> index`. The view of a
replica is `backlog(now)` (seconds of queued and running work) and
`match_tokens(request)` (how much of the prompt its tree holds). Ties always
break the same way: least backlog, then the replica routed to least recently,
then lowest index; so an idle fleet takes turns instead of piling on replica 0. `ROUTERS` maps the
scenario's `router.kind` to a class.
"""

import hashlib
from bisect import bisect_right
from collections.abc import Sequence

from .config import Scenario
from .replica import Replica
from .traffic import Request, stream

__all__ = ["ROUTERS", "CacheAware", "ConsistentHash", "LeastLoaded", "RandomChoice",
           "RoundRobin", "make_router"]


def _least_loaded(replicas: Sequence[Replica], now: float) -> int:
    best, best_key = 0, None
    for r in replicas:
        key = (r.backlog(now), r.last_routed)  # the index breaks any tie left: first in order wins
        if best_key is None or key < best_key:
            best, best_key = r.index, key
    return best


class RoundRobin:
    """Send request n to replica n mod replicas, whatever they hold or carry."""

    def __init__(self, scenario: Scenario) -> None:
        self.cursor = 0

    def choose(self, request: Request, replicas: Sequence[Replica], now: float) -> int:
        index = self.cursor % len(replicas)
        self.cursor += 1
        return index


class RandomChoice:
    """Pick a replica uniformly at random, from the scenario seed's `router` stream."""

    def __init__(self, scenario: Scenario) -> None:
        self.rng = stream(scenario.seed, "router")

    def choose(self, request: Request, replicas: Sequence[Replica], now: float) -> int:
        return self.rng.randrange(len(replicas))


class LeastLoaded:
    """Pick the replica with the least backlog in seconds."""

    def __init__(self, scenario: Scenario) -> None:
        pass

    def choose(self, request: Request, replicas: Sequence[Replica], now: float) -> int:
        return _least_loaded(replicas, now)


class ConsistentHash:
    """Pin each system prompt to a replica on a hash ring.

    Each replica owns `VNODES` points on a ring of 64-bit BLAKE2b hashes; a
    request goes to the first point at or after its system prompt's hash.
    Same prompt, same replica; adding a replica moves only the prompts that
    land on its new points. Load plays no part.
    """

    VNODES = 64

    def __init__(self, scenario: Scenario) -> None:
        ring = sorted((_hash64(f"replica/{i}/{v}"), i)
                      for i in range(scenario.fleet.replicas) for v in range(self.VNODES))
        self.points = [p for p, _ in ring]
        self.owners = [i for _, i in ring]
        self.memo: dict[int, int] = {}

    def choose(self, request: Request, replicas: Sequence[Replica], now: float) -> int:
        prompt = request.system_prompt
        if prompt not in self.memo:
            at = bisect_right(self.points, _hash64(f"prompt/{prompt}")) % len(self.points)
            self.memo[prompt] = self.owners[at]
        return self.memo[prompt]


class CacheAware:
    """Longest cached match, unless it is too busy.

    Take the replica whose tree holds the longest prefix of the prompt (ties:
    least backlog, then as every router breaks them). If its backlog exceeds the least-loaded
    replica's by more than `router.spill_threshold_s` seconds, spill to the
    least-loaded replica instead. With the threshold off, never spill. With no
    match anywhere, this is least-loaded routing.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.threshold = scenario.router.spill_threshold_s

    def choose(self, request: Request, replicas: Sequence[Replica], now: float) -> int:
        best = min(replicas, key=lambda r: (-r.match_tokens(request), r.backlog(now), r.last_routed, r.index)).index
        if self.threshold is None:
            return best
        least = _least_loaded(replicas, now)
        if replicas[best].backlog(now) - replicas[least].backlog(now) > self.threshold:
            return least
        return best


Router = RoundRobin | RandomChoice | LeastLoaded | ConsistentHash | CacheAware

ROUTERS: dict[str, type[Router]] = {
    "round_robin": RoundRobin,
    "random": RandomChoice,
    "least_loaded": LeastLoaded,
    "consistent_hash": ConsistentHash,
    "cache_aware": CacheAware,
}


def make_router(scenario: Scenario) -> Router:
    return ROUTERS[scenario.router.kind](scenario)


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
