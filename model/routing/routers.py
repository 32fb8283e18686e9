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
import math
import statistics
from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from model.gpus.hardware import profile_of
from model.memory import Memory
from model.rng import stream
from model.routing.sglang import Decision, SGLangRouter, VLLMRouterRule
from model.routing.text import CHARS_PER_TOKEN, Renderer
from model.studies.explainers import fetch_plan, fleet_link

if TYPE_CHECKING:
    from model.config import Scenario
    from model.radix import RadixTree
    from model.sources.traffic import Request


class Routable(Protocol):
    """What a router may look at on a replica, in either mode (`replica.Replica`, `serving.ServingReplica`)."""

    index: int
    tree: RadixTree
    cache: bool
    last_routed: int  # id of the last request routed here (for tie-breaks)

    def backlog(self, now: float) -> float: ...

    def in_flight(self) -> int: ...

    def prefill_s(self, uncached_tokens: int) -> float: ...


__all__ = ["ROUTERS", "BoundedHash", "CacheAware", "ConsistentHash", "Cost", "LeastLoaded", "Policy", "PowerOfTwo",
           "PrefixLoadAware", "RandomChoice", "Routable", "RoundRobin", "SGLang", "VLLMRouter", "View", "make_router"]


class View:
    """The fleet as a router sees it when one request arrives.

    `matched(i)` is what the router believes replica `i` holds: the tree
    itself with the exact view, or the router's own `Memory` of what it sent
    there with the approximate one. `actual(i)` is always the tree.
    """

    __slots__ = ("request", "now", "replicas", "memory", "_actual", "_believed", "_backlogs")

    def __init__(self, request: Request, replicas: Sequence[Routable], now: float, memory: Memory | None = None) -> None:
        self.request = request
        self.now = now
        self.replicas = replicas
        self.memory = memory
        self._actual: list[int | None] = [None] * len(replicas)
        self._believed: list[int | None] = self._actual if memory is None else [None] * len(replicas)
        self._backlogs: list[float] | None = None  # every replica's backlog at `now`, once one is asked for

    def __len__(self) -> int:
        return len(self.replicas)

    def actual(self, i: int) -> int:
        """Tokens of the request's prompt that replica `i`'s tree holds (0 with the cache off)."""
        m = self._actual[i]
        if m is None:
            r = self.replicas[i]
            m = self._actual[i] = r.tree.peek(self.request.keys) if r.cache else 0
        return m

    def learn(self, i: int, tokens: int) -> None:
        """Take `tokens` as `actual(i)`: what replica `i`'s own walk of its tree for this prompt just found."""
        if self._actual[i] is None:
            self._actual[i] = tokens

    def matched(self, i: int) -> int:
        """Tokens of the request's prompt the router believes replica `i` holds."""
        if self.memory is None:
            return self.actual(i)
        m = self._believed[i]
        if m is None:
            m = self._believed[i] = self.memory.matched(i, self.request.keys, self.now)
        return m

    def matches(self) -> list[int]:
        """`matched(i)` of every replica, in index order."""
        if self.memory is not None:
            return [self.matched(i) for i in range(len(self.replicas))]
        m = self._actual
        if None in m:
            keys = self.request.keys
            first = keys[0] if keys else None  # a tree without the prompt's first key matches nothing of it
            m[:] = [(r.tree.peek(keys) if r.cache and first in r.tree.root.children else 0) if x is None else x
                    for x, r in zip(m, self.replicas)]  # replica i is replicas[i]; in place: `_believed` may be it
        return m  # type: ignore[return-value]

    def actuals(self) -> list[int]:
        """`actual(i)` of every replica, in index order."""
        if self.memory is None:
            return self.matches()
        return [self.actual(i) for i in range(len(self.replicas))]

    def backlog(self, i: int) -> float:
        """Seconds of work ahead of the request on replica `i`."""
        return self.backlogs()[i]

    def backlogs(self) -> list[float]:
        """`backlog(i)` of every replica, in index order (worked out once per decision)."""
        b = self._backlogs
        if b is None:
            now, replicas = self.now, self.replicas
            fleet = getattr(type(replicas[0]), "backlogs", None) if replicas else None  # one pass, if the class has it
            b = self._backlogs = fleet(replicas, now) if fleet is not None else [r.backlog(now) for r in replicas]
        return b

    def in_flight(self, i: int) -> int:
        """Requests queued or running on replica `i`."""
        return self.replicas[i].in_flight()

    def tree_tokens(self, i: int) -> int:
        """How big the router believes replica `i`'s tree is, in tokens."""
        if self.memory is None:
            return self.replicas[i].tree.total_tokens
        return self.memory.tokens(i, self.now)

    def least_loaded(self) -> int:
        """The replica with the least backlog (ties: least recently routed, then lowest index)."""
        b = self.backlogs()
        least = min(b)
        if b.count(least) == 1:
            return b.index(least)
        return self._tie_break([i for i, x in enumerate(b) if x == least])

    def fewest_in_flight(self) -> int:
        """The replica with the fewest requests in flight (ties: as `least_loaded`)."""
        b = self.backlogs()
        return min(self.replicas, key=lambda r: (r.in_flight(), b[r.index], r.last_routed, r.index)).index

    def longest_match(self) -> int:
        """The replica believed to hold the longest prefix (ties: least backlog, then as everywhere)."""
        matched = self.matches()
        top = max(matched)
        if matched.count(top) == 1:
            return matched.index(top)
        tied = [i for i, m in enumerate(matched) if m == top]
        if len(tied) > 1:
            b = self.backlogs()
            least = min(b[i] for i in tied)
            tied = [i for i in tied if b[i] == least]
        return self._tie_break(tied)

    def _tie_break(self, tied: list[int]) -> int:
        """Of replicas tied on what the router compares, the one routed to least recently, then the lowest index."""
        if len(tied) == 1:
            return tied[0]
        replicas = self.replicas
        return min([(replicas[i].last_routed, i) for i in tied])[1]  # no key function: no call per replica


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
        best = view.longest_match()
        if self.threshold is None:
            return best
        least = view.least_loaded()
        if view.backlog(best) - view.backlog(least) > self.threshold:
            return least
        return best


class PowerOfTwo:
    """Power of two choices: draw two different replicas at random, send to the less loaded.

    The two come from the scenario seed's `router` stream; the less loaded
    is the one with less backlog (ties as every router breaks them). Source:
    Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing"
    (2001); SGLang's router ships it as `power_of_two`. Caches play no part.
    """

    key: ClassVar[str] = "power_of_two"
    label: ClassVar[str] = "Power of two"
    rule: ClassVar[str] = "draws two replicas at random and takes the less loaded"

    def __init__(self, scenario: Scenario) -> None:
        self.rng = stream(scenario.seed, "router")

    def choose(self, view: View) -> int:
        n = len(view)
        if n == 1:
            return 0
        a = self.rng.randrange(n)
        b = self.rng.randrange(n - 1)
        b += b >= a  # a second, different replica
        now = view.now
        return min((view.replicas[a], view.replicas[b]), key=lambda r: (r.backlog(now), r.last_routed, r.index)).index


class BoundedHash:
    """Consistent hashing with bounded loads: the affinity key's replica, unless it is full.

    No replica may hold more than ceil(c x (in flight + 1) / replicas)
    requests, c = `router.load_factor`: a request walks the ring from its
    key's point to the first replica under that bound. Source: Mirrokni,
    Thorup and Zadimoghaddam, "Consistent Hashing with Bounded Loads" (SODA
    2018); c = 1.25 is the commonly deployed setting (HAProxy's
    `hash-balance-factor 125`, off unless set). The ring is `ConsistentHash`'s.
    """

    key: ClassVar[str] = "bounded_hash"
    label: ClassVar[str] = "Bounded-load hash"
    rule: ClassVar[str] = "hashes the system prompt to a replica, walking on past any replica over its load bound"

    def __init__(self, scenario: Scenario) -> None:
        self.ring = ConsistentHash(scenario)
        self.factor = scenario.router.load_factor

    def bound(self, view: View) -> int:
        """The most requests any replica may hold once this one is placed."""
        in_flight = sum(view.in_flight(i) for i in range(len(view)))
        return math.ceil(self.factor * (in_flight + 1) / len(view))

    def choose(self, view: View) -> int:
        bound, ring = self.bound(view), self.ring
        start = bisect_right(ring.points, _hash64(view.request.affinity))
        for step in range(len(ring.points)):
            owner = ring.owners[(start + step) % len(ring.points)]
            if view.in_flight(owner) < bound:
                return owner
        return view.fewest_in_flight()  # unreachable for c >= 1: some replica is always under the bound


class PrefixLoadAware:
    """Prefix-aware routing with the locality note's load-aware fallback.

    Take the replica believed to hold the longest prefix (ties: least backlog,
    then as everywhere), unless its in-flight count exceeds
    `router.load_multiple` times the fleet's median in-flight count; then take
    the least loaded. The median is floored at one request, so that an idle
    fleet (median 0) does not make every busy replica "overloaded" and turn
    this into least-loaded routing: one request in flight is the least load
    that says anything about a replica. Source: the KV-locality note (reroute
    when a backend's in-flight count exceeds 2x the median).
    """

    key: ClassVar[str] = "prefix_load_aware"
    label: ClassVar[str] = "Prefix + load fallback"
    rule: ClassVar[str] = "follows the longest prefix unless that replica holds more than a multiple of the median load"

    def __init__(self, scenario: Scenario) -> None:
        self.multiple = scenario.router.load_multiple

    def choose(self, view: View) -> int:
        best = view.longest_match()
        loads = sorted(view.in_flight(i) for i in range(len(view)))
        median = statistics.median(loads)
        if view.in_flight(best) > self.multiple * max(median, 1):
            return view.least_loaded()
        return best


class SGLang:
    """SGLang's router (sgl-router 0.3.2, `cache_aware`), as its launcher runs it, on what it knows itself.

    The rule is `sglang.SGLangRouter`'s: if the fleet is imbalanced (max -
    min in flight > `router.balance_abs_threshold`, 64, and max > min x
    `router.balance_rel_threshold`, 1.5), the fewest in flight; else the
    worker its tree names for the longest routed prefix if the match rate
    exceeds `router.cache_threshold` (0.3); else the fewest in flight.
    Ties go to the lowest index (the router's worker order).

    What it knows is its own: a tree of the prompt text it routed (one for
    the fleet, nodes tagged by replica, cut to `router.max_tree_chars` per
    replica every `router.eviction_interval_s` seconds of simulated time),
    never the replicas' caches, their evictions or the answers; `router.view`
    does not apply. Prompts become text by `text.Renderer` (4 characters a
    token, so character matches stop where segment matches do). Its load is
    the replica's requests in flight: sent and not yet answered in full
    (serving mode counts decoding ones; in lab mode nothing decodes, so a
    request leaves the count when its prefill ends).
    """

    key: ClassVar[str] = "sglang"
    label: ClassVar[str] = "SGLang router"
    rule: ClassVar[str] = ("balances load when the fleet is lopsided, else follows its own tree of routed text above "
                           "a match threshold, else the least loaded")
    RULE: ClassVar[type[SGLangRouter]] = SGLangRouter  # the real router's rule, on its own state
    own_view: ClassVar[bool] = True  # knows what it routed, not the trees: `router.view` does not apply
    # what its cache branch did, for `explain` ({rate}: the tree's match rate, {named}: the replica the tree named)
    CACHE_WHY: ClassVar[str] = ("Its tree matched {rate:.0%} of the prompt, above its threshold, at a prefix it first "
                                "sent to replica {named}: it went there, however busy.")

    def __init__(self, scenario: Scenario) -> None:
        self.settings = scenario.router
        self.router: SGLangRouter | None = None  # made at the first decision, for the replicas routed between
        self.renderer = Renderer()
        self.text = ""  # the prompt of the decision under way, as text
        self.note_beliefs = False  # set (by `explain`) to keep `beliefs` at every decision
        self.beliefs: list[int] = []  # tokens its tree held for each replica at the last decision
        self.last: Decision | None = None

    def choose(self, view: View) -> int:
        router = self.router
        if router is None:
            r = self.settings
            router = self.router = self.RULE(len(view), r.cache_threshold, r.balance_abs_threshold,
                                             r.balance_rel_threshold, r.eviction_interval_s,
                                             r.max_tree_chars * self.RULE.UNITS_PER_CHAR)
        request = view.request
        text = self.text = self.renderer.prompt(request.keys, request.sizes)
        replicas = view.replicas
        decision = self.last = router.decide(text, [r.in_flight() for r in replicas], view.now)
        if self.note_beliefs:
            self.beliefs = [router.tree.held(text, i) // CHARS_PER_TOKEN for i in range(len(replicas))]
        return decision.worker

    def sent(self, index: int) -> int:
        """Note that this decision's prompt went to replica `index` (its choice, or one forced on it); returns the
        tokens its tree held there, what the router counted on finding."""
        assert self.router is not None, "sent() follows choose()"
        believed = self.router.tree.held(self.text, index) // CHARS_PER_TOKEN
        self.router.routed(self.text, index)
        return believed


class VLLMRouter(SGLang):
    """vLLM's router (vllm-router 0.1.17, `cache_aware`): SGLang's rule, but equal matches go to the least loaded.

    A fork of sgl-router, checked against its binary: the same balance test,
    threshold and tree of routed text (the same `router.*` keys), except
    that when several replicas hold the longest match at equal length it
    takes the least loaded of them (ties: lowest index), where sgl-router
    takes the one that first routed that prefix. It matches token ids, not
    characters, which for the lab's text gives the same match rates. Its
    launcher trims its tree every 120 s to 2^25 of its own units (about 8 a
    token, taken as 2 a character); `router.max_tree_chars` is in characters
    for both. The lab's runs never fill a tree that far, so `router.*`'s
    defaults (sgl-router's) decide the same as its own.
    """

    key: ClassVar[str] = "vllm_router"
    label: ClassVar[str] = "vLLM router"
    rule: ClassVar[str] = ("as the SGLang router, but of the replicas holding the longest match it takes the least "
                           "loaded")
    RULE: ClassVar[type[SGLangRouter]] = VLLMRouterRule
    CACHE_WHY: ClassVar[str] = ("Its tree matched {rate:.0%} of the prompt, above its threshold: of the replicas "
                                "holding that much of it, it took the one with the fewest requests in flight.")


class Cost:
    """Lowest estimated time to first token: queue wait plus prefill of what is not cached there.

    For each replica: its backlog plus the prefill time of the prompt tokens
    it is believed not to hold; the smallest sum wins (ties as everywhere).
    With fetching on (`fleet.fetch`, lab mode), a replica may move what the
    best other replica is believed to hold beyond its own match, at the
    tier's speed, when that beats computing it (`explainers.fetch_plan`, the
    replicas' own rule): its estimate is then backlog + transfer + prefill of
    the rest. Source: Mooncake's Conductor (transfer + queue + prefill per
    candidate, Qin et al. 2024) and NVIDIA Dynamo's KV router (cost of new
    prefill blocks plus load).
    """

    key: ClassVar[str] = "cost"
    label: ClassVar[str] = "Lowest estimated TTFT"
    rule: ClassVar[str] = "picks the replica whose queue plus uncached prefill is shortest"

    def __init__(self, scenario: Scenario) -> None:
        self.link = fleet_link(scenario)  # None: no fetching, the estimate is queue + prefill
        self.profile = profile_of(scenario)[0] if self.link is not None else None

    def estimate(self, view: View, i: int) -> float:
        """Seconds until the request's first token on replica `i`, as the router estimates them."""
        r = view.replicas[i]
        if self.link is None:
            return view.backlog(i) + r.prefill_s(view.request.prompt_tokens - view.matched(i))
        return self._fetching(view, i, _top_two(view.matches()))

    def choose(self, view: View) -> int:
        if self.link is None:
            return min(view.replicas, key=lambda r: (self.estimate(view, r.index), r.last_routed, r.index)).index
        top = _top_two(view.matches())
        return min(view.replicas, key=lambda r: (self._fetching(view, r.index, top), r.last_routed, r.index)).index

    def _fetching(self, view: View, i: int, top: tuple[int, int]) -> float:
        """backlog + transfer of what the best other replica holds beyond i's match (if faster) + prefill of the rest."""
        matched = view.matched(i)
        peer = top[1] if matched == top[0] else top[0]  # the best other replica's match
        tokens, seconds = fetch_plan(self.profile, peer - matched, self.link)  # type: ignore[arg-type]
        return view.backlog(i) + seconds + view.replicas[i].prefill_s(view.request.prompt_tokens - matched - tokens)


def _top_two(values: list[int]) -> tuple[int, int]:
    """The largest value and the second largest (equal to it if it occurs twice; 0 if there is one value)."""
    first = second = 0
    for v in values:
        if v > first:
            first, second = v, first
        elif v > second:
            second = v
    return first, second


Policy = RoundRobin | RandomChoice | LeastLoaded | ConsistentHash | CacheAware | PowerOfTwo | BoundedHash | \
    PrefixLoadAware | SGLang | VLLMRouter | Cost

ROUTERS: dict[str, type[Policy]] = {cls.key: cls for cls in (RoundRobin, RandomChoice, LeastLoaded, ConsistentHash,
                                                             CacheAware, PowerOfTwo, BoundedHash, PrefixLoadAware,
                                                             SGLang, VLLMRouter, Cost)}


def make_router(scenario: Scenario) -> Policy:
    return ROUTERS[scenario.router.kind](scenario)


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
