"""What a router sees of the fleet at one decision (`View`), and what every policy is (`Policy`).

A policy is one file of `routing/policies/`: a subclass of `Policy` declaring
its `key` (the scenario's `router.kind`), a `label` for people, a one-line
`rule`, the glossary's `help` and `brief`, and `choose(view) -> index`; its
docstring states the rule in full.
The list of kinds (`routing/kinds.py`) names the files, one line each,
and is the only list of them: the scenario's allowed kinds, the page's menu,
its glossary and `prefix-lab keys` all read it.

A `View` is made for one routing decision: the
request, the time, and each replica's backlog and cached match, a match
looked up lazily and at most once per replica, so it can never outlive the
decision it was made for. With the fleet's `FirstKeys` index (lab mode's
trees keep one), only the trees whose root has the prompt's first key are
looked up; the rest hold none of it, so the numbers are the same. Ties
always break the same way: least backlog, then the replica routed to least
recently, then lowest index; so an idle fleet takes turns instead of piling
on replica 0.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from model.holders import FirstKeys
from model.memory import Memory

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


__all__ = ["Policy", "Routable", "View"]


class Policy:
    """A routing policy: made from the scenario once per run, asked `choose` once per request.

    A policy's file declares its words as class keywords, `class Name(Policy,
    key=..., label=..., rule=..., help=..., brief=...)`: the scenario's
    `router.kind`, its name for people (the page's menu), one line on how it
    picks, the glossary's explanation and the few words under the menu. One
    that compares something per replica also has `scores(view)`, the
    hindsight explainer's table.
    """

    key: ClassVar[str]
    label: ClassVar[str]
    rule: ClassVar[str]
    help: ClassVar[str]
    brief: ClassVar[str]

    def __init_subclass__(cls, *, key: str = "", label: str = "", rule: str = "", help: str = "", brief: str = "",
                          **rest: object) -> None:
        super().__init_subclass__(**rest)
        given = {"key": key, "label": label, "rule": rule, "help": help, "brief": brief}
        missing = [name for name, words in given.items() if not words and not hasattr(cls, name)]
        if missing:
            raise TypeError(f"policy {cls.__name__} declares no {', '.join(missing)}")
        for name, words in given.items():
            if words:  # a subclass of a policy keeps what it does not say again
                setattr(cls, name, words)

    def __init__(self, scenario: Scenario) -> None:
        """A policy that keeps nothing from the scenario needs no `__init__` of its own."""

    def choose(self, view: View) -> int:
        raise NotImplementedError(f"{type(self).__name__}.choose")


class View:
    """The fleet as a router sees it when one request arrives.

    `matched(i)` is what the router believes replica `i` holds: the tree
    itself with the exact view, or the router's own `Memory` of what it sent
    there with the approximate one. `actual(i)` is always the tree.
    """

    __slots__ = ("request", "now", "replicas", "memory", "heads", "_actual", "_believed", "_backlogs")

    def __init__(self, request: Request, replicas: Sequence[Routable], now: float, memory: Memory | None = None,
                 heads: FirstKeys | None = None) -> None:
        self.request = request
        self.now = now
        self.replicas = replicas
        self.memory = memory
        self.heads = heads  # which trees have which first keys (the trees keep it), if the engine has one
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
            heads = self.heads
            if heads is not None:  # peek only the trees whose root has the prompt's first key
                held = heads.holders.get(keys[0], 0) if keys else 0
                replicas = self.replicas
                if m.count(None) == len(m):  # nothing looked up yet (the usual case): 0 but where the key is
                    m[:] = [0] * len(m)
                    while held:
                        low = held & -held
                        i = low.bit_length() - 1
                        m[i] = replicas[i].tree.peek(keys)
                        held ^= low
                else:
                    for i, x in enumerate(m):
                        if x is None:
                            m[i] = replicas[i].tree.peek(keys) if held >> i & 1 else 0
                return m  # type: ignore[return-value]
            first = keys[0] if keys else None  # a tree without the prompt's first key matches nothing of it
            m[:] = [(r.tree.peek(keys) if r.cache and first in r.tree.root.children else 0) if x is None else x
                    for x, r in zip(m, self.replicas)]  # replica i is replicas[i]; in place: `_believed` may be it
        return m  # type: ignore[return-value]

    def most_elsewhere(self, index: int, enough: int, first: int = -1) -> int:
        """The most tokens of the prompt a replica other than `index` holds (`max(actual(i))` over `i != index`, 0
        with one replica), or, once one is found holding `enough` or more, that one's: the rest are not looked up.
        With the fleet's index, only the other trees whose root has the prompt's first key are looked up (each at
        most once, as `actual` does); the rest hold none of it. Replica `first`, if one of them, is looked up
        before the others: the one likeliest to hold enough (which one is found first changes nothing to a
        caller that takes at most `enough`)."""
        heads = self.heads
        if heads is None:
            every = self.actuals()
            return max(every[:index] + every[index + 1:], default=0)
        keys, m, replicas = self.request.keys, self._actual, self.replicas
        held = (heads.holders.get(keys[0], 0) if keys else 0) & ~(1 << index)
        lead = held & (1 << first) if first >= 0 else 0  # replica `first`'s bit, if it is one of them
        most = 0
        for bits in (lead, held ^ lead):  # `first`, then the others in index order
            while bits:
                low = bits & -bits
                i = low.bit_length() - 1
                x = m[i]
                if x is None:
                    x = m[i] = replicas[i].tree.peek(keys)
                if x > most:
                    most = x
                    if most >= enough:
                        return most
                bits ^= low
        return most

    def actuals(self) -> list[int]:
        """`actual(i)` of every replica, in index order."""
        if self.memory is None:
            return self.matches()
        return [self.actual(i) for i in range(len(self.replicas))]

    def backlog(self, i: int) -> float:
        """Seconds of work ahead of the request on replica `i` (the fleet's list if made, else that replica's own:
        the same number)."""
        b = self._backlogs
        return self.replicas[i].backlog(self.now) if b is None else b[i]

    def least_backlog(self) -> float:
        """`min(backlogs())`, looking no further once an idle replica is found: no backlog is below 0, so the
        first that is 0 is the least (with many replicas most are idle, and most decisions end after a few)."""
        b = self._backlogs
        if b is not None:
            return min(b)
        now, least = self.now, math.inf
        for r in self.replicas:
            x = r.backlog(now)
            if x <= 0.0:
                return x
            if x < least:
                least = x
        return least

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

    def per_replica(self, what: Callable[[int], float]) -> list[float]:
        """`what(i)` for every replica, rounded to the microsecond or token for a table."""
        return [round(float(what(i)), 6) for i in range(len(self.replicas))]

    def least_loaded(self) -> int:
        """The replica with the least backlog (ties: least recently routed, then lowest index)."""
        b = self.backlogs()
        least = min(b)
        if b.count(least) == 1:
            return b.index(least)
        # the least (backlog, last routed, index) in one pass of C: idle replicas tie at 0 on most requests
        return min(zip(b, [r.last_routed for r in self.replicas], range(len(b))))[2]

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
        b, replicas = self.backlogs(), self.replicas
        # of the tied, the least (backlog, last routed, index): no key function, no call per replica
        return min([(b[i], replicas[i].last_routed, i) for i, m in enumerate(matched) if m == top])[2]


def _top_two(values: list[int]) -> tuple[int, int]:
    """The largest value and the second largest (equal to it if it occurs twice; 0 if there is one value)."""
    first = second = 0
    for v in values:
        if v > first:
            first, second = v, first
        elif v > second:
            second = v
    return first, second


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
