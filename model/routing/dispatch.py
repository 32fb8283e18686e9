"""Routing as both modes do it: a policy, what it knows, decisions forced from outside, how wrong it was.

A `Dispatcher` belongs to one run. For each request it makes the `View`
(the exact trees, or with `router.view=approximate` the router's own
`Memory`; a policy with an index of its own, `SGLang`'s, ignores both),
asks the policy to choose (unless `force` names the replica, for
counterfactuals; the policy still chooses, so its own state moves as it
would), tells `watch` of the decision, and then, with the approximate view,
counts how many of the tokens it believed cached were not there and
remembers what it sent (a policy with its own index is told where the
request went, and counts what it believed). The engines do the rest.
"""

from collections.abc import Callable, Sequence

from model.config import Scenario
from model.holders import FirstKeys
from model.memory import Memory
from model.metrics import ratio
from model.routing.policies import make_router
from model.routing.policies.sglang import SGLang
from model.routing.view import Routable, View
from model.sources.traffic import Request

__all__ = ["Dispatcher", "held_elsewhere"]


class Dispatcher:
    """One run's router: choose a replica per request, keeping the router's memory and its errors."""

    __slots__ = ("kind", "policy", "memory", "force", "watch", "believed", "overestimated", "notes", "heads", "_own")

    def __init__(self, scenario: Scenario, force: dict[int, int] | None = None) -> None:
        r = scenario.router
        self.kind = r.kind
        self.policy = make_router(scenario)
        # a policy that keeps its own index of what it sent: router.view does not apply
        own = self._own = isinstance(self.policy, SGLang)
        self.memory = Memory(scenario.fleet.replicas, r.view_ttl_s) if r.view == "approximate" and not own else None
        self.notes: tuple[str, ...] = ((f"The {self.policy.label} keeps its own tree of the text it routed: what the "
                                        "router knows (router.view) does not apply to it",)
                                       if own and r.view == "approximate" else ())
        self.force = force or {}  # request id -> replica, overriding the policy
        self.watch: Callable[[View, int], None] | None = None  # told of every decision as it is made
        self.believed = 0  # tokens the router believed cached on the replicas it chose
        self.overestimated = 0  # of those, tokens the chosen replica's tree did not hold
        self.heads: FirstKeys | None = None  # the replicas' trees' shared index of first keys, if the engine keeps one

    def route(self, request: Request, replicas: Sequence[Routable], now: float) -> tuple[View, int]:
        """The view the decision was made on, and the replica chosen."""
        view = View(request, replicas, now, self.memory, self.heads)
        index = self.force.get(request.id, self.policy.choose(view))
        if not 0 <= index < len(replicas):
            raise RuntimeError(f"router {self.kind} chose replica {index} of {len(replicas)}")
        if self.watch is not None:
            self.watch(view, index)
        if self._own:  # told where the request went, forced or not, as the real router knows
            believed = self.policy.sent(index)  # type: ignore[attr-defined]
            self.believed += believed
            self.overestimated += max(0, believed - view.actual(index))
        elif self.memory is not None:
            believed = view.matched(index)
            self.believed += believed
            self.overestimated += max(0, believed - view.actual(index))
            self.memory.sent(index, request.keys, request.sizes, now)
        return view, index

    def overestimate(self) -> float:
        """Share of the tokens the router believed cached, on the replicas it chose, that were not there."""
        return ratio(self.overestimated, self.believed)


def held_elsewhere(view: View, index: int, actual: int | None = None, likeliest: int = -1) -> int:
    """Most tokens of the request another replica's tree held at routing, up to its cacheable tokens (0 if the
    chosen one holds all it can).

    No tree holds more of a prompt than its cacheable tokens (a replayed trace's are its whole prompt): so the cap changes no count of tokens recomputed (at most the prompt less
    what the chosen replica had), and once another tree is found holding that many, the rest are not looked
    up. `actual` is the chosen replica's match when the caller has it (lab mode's replica has just looked the
    prompt up in its tree): the same number `view.actual(index)` would find, without a second walk. `likeliest`
    is a replica to look up first (lab mode's: where the request's conversation was sent last), which changes
    only how many trees are looked up.
    """
    request, replicas = view.request, view.replicas
    if not replicas[index].cache:
        return 0
    mine = view.actual(index) if actual is None else actual
    cacheable = request.cacheable_tokens
    if mine >= cacheable:  # no one can hold more
        return 0
    view.learn(index, mine)
    most = view.most_elsewhere(index, cacheable, likeliest)
    return most if most < cacheable else cacheable
