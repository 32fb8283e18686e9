"""Routers: each picks a replica for a request from what it sees of the fleet.

A router is one small class carrying its `key` (the scenario's `router.kind`),
a `label` for people and a one-line `rule`; its docstring states the rule in
full. `ROUTERS` maps keys to classes and is the only list of them: the
scenario's allowed kinds, the page's menu and `prefix-lab keys` all read it.

`choose(view) -> index`. A `View` is made for one routing decision: the
request, the time, and each replica's backlog and cached match, a match
looked up lazily and at most once per replica, so it can never outlive the
decision it was made for. Ties always break the same way: least backlog,
then the replica routed to least recently, then lowest index; so an idle
fleet takes turns instead of piling on replica 0.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from .rng import stream

if TYPE_CHECKING:
    from .config import Scenario
    from .radix import RadixTree
    from .traffic import Request


class Routable(Protocol):
    """What a router may look at on a replica, in either mode (`replica.Replica`, `serving.ServingReplica`)."""

    index: int
    tree: RadixTree
    cache: bool
    last_routed: int  # id of the last request routed here (for tie-breaks)

    def backlog(self, now: float) -> float: ...

__all__ = ["ROUTERS", "CacheAware", "ConsistentHash", "LeastLoaded", "Policy", "RandomChoice", "RoundRobin", "View",
           "make_router"]


class View:
    """The fleet as a router sees it when one request arrives."""

    __slots__ = ("request", "now", "replicas", "_matched")

    def __init__(self, request: Request, replicas: Sequence[Routable], now: float) -> None:
        self.request = request
        self.now = now
        self.replicas = replicas
        self._matched: list[int | None] = [None] * len(replicas)

    def __len__(self) -> int:
        return len(self.replicas)

    def matched(self, i: int) -> int:
        """Tokens of the request's prompt that replica `i`'s tree holds (0 with the cache off)."""
        m = self._matched[i]
        if m is None:
            r = self.replicas[i]
            m = self._matched[i] = r.tree.peek(self.request.keys) if r.cache else 0
        return m

    def matches(self) -> list[int]:
        """`matched(i)` of every replica, in index order."""
        m = self._matched
        if None in m:
            keys = self.request.keys
            for r in self.replicas:
                if m[r.index] is None:
                    m[r.index] = r.tree.peek(keys) if r.cache else 0
        return m  # type: ignore[return-value]

    def backlog(self, i: int) -> float:
        """Seconds of work ahead of the request on replica `i`."""
        return self.replicas[i].backlog(self.now)

    def least_loaded(self) -> int:
        """The replica with the least backlog (ties: least recently routed, then lowest index)."""
        now = self.now
        return min(self.replicas, key=lambda r: (r.backlog(now), r.last_routed, r.index)).index


class RoundRobin:
    """Send request n to replica n mod replicas, whatever they hold or carry."""

    key: ClassVar[str] = "round_robin"
    label: ClassVar[str] = "Round robin"
    rule: ClassVar[str] = "takes turns, ignoring caches and load"

    def __init__(self, scenario: Scenario) -> None:
        self.cursor = 0

    def choose(self, view: View) -> int:
        index = self.cursor % len(view)
        self.cursor += 1
        return index


class RandomChoice:
    """Pick a replica uniformly at random, from the scenario seed's `router` stream."""

    key: ClassVar[str] = "random"
    label: ClassVar[str] = "Random"
    rule: ClassVar[str] = "picks any replica at random"

    def __init__(self, scenario: Scenario) -> None:
        self.rng = stream(scenario.seed, "router")

    def choose(self, view: View) -> int:
        return self.rng.randrange(len(view))


class LeastLoaded:
    """Pick the replica with the least backlog in seconds."""

    key: ClassVar[str] = "least_loaded"
    label: ClassVar[str] = "Least loaded"
    rule: ClassVar[str] = "picks the replica with the least queued work"

    def __init__(self, scenario: Scenario) -> None:
        pass

    def choose(self, view: View) -> int:
        return view.least_loaded()


class ConsistentHash:
    """Pin each affinity key (for chat, the system prompt) to a replica on a hash ring.

    Each replica owns `VNODES` points on a ring of 64-bit BLAKE2b hashes; a
    request goes to the first point at or after its affinity key's hash.
    Same key, same replica; adding a replica moves only the keys that land
    on its new points. Load plays no part.
    """

    key: ClassVar[str] = "consistent_hash"
    label: ClassVar[str] = "Consistent hash"
    rule: ClassVar[str] = "pins each system prompt to one replica by hashing it, whatever the load"
    VNODES = 64

    def __init__(self, scenario: Scenario) -> None:
        ring = sorted((_hash64(f"replica/{i}/{v}"), i)
                      for i in range(scenario.fleet.replicas) for v in range(self.VNODES))
        self.points = [p for p, _ in ring]
        self.owners = [i for _, i in ring]
        self.memo: dict[str, int] = {}

    def choose(self, view: View) -> int:
        affinity = view.request.affinity
        if affinity not in self.memo:
            at = bisect_right(self.points, _hash64(affinity)) % len(self.points)
            self.memo[affinity] = self.owners[at]
        return self.memo[affinity]


class CacheAware:
    """Longest cached match, unless it is too busy.

    Take the replica whose tree holds the longest prefix of the prompt (ties:
    least backlog, then as every router breaks them). If its backlog exceeds
    the least-loaded replica's by more than `router.spill_threshold_s`
    seconds, spill to the least-loaded replica instead. With the threshold
    off, never spill. With no match anywhere, this is least-loaded routing.
    """

    key: ClassVar[str] = "cache_aware"
    label: ClassVar[str] = "Cache-aware"
    rule: ClassVar[str] = "follows the longest cached prefix, spilling to the least loaded past a backlog threshold"

    def __init__(self, scenario: Scenario) -> None:
        self.threshold = scenario.router.spill_threshold_s

    def choose(self, view: View) -> int:
        now, matched = view.now, view.matches()
        best = min(view.replicas, key=lambda r: (-matched[r.index], r.backlog(now), r.last_routed, r.index)).index
        if self.threshold is None:
            return best
        least = view.least_loaded()
        if view.backlog(best) - view.backlog(least) > self.threshold:
            return least
        return best


Policy = RoundRobin | RandomChoice | LeastLoaded | ConsistentHash | CacheAware

ROUTERS: dict[str, type[Policy]] = {cls.key: cls for cls in (RoundRobin, RandomChoice, LeastLoaded, ConsistentHash,
                                                             CacheAware)}


def make_router(scenario: Scenario) -> Policy:
    return ROUTERS[scenario.router.kind](scenario)


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
