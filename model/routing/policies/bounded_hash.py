"""Consistent hashing with bounded loads: the affinity key's replica, unless it is full."""

from __future__ import annotations

import math
from bisect import bisect_right

from model.config import Scenario
from model.routing.policies.consistent_hash import ConsistentHash
from model.routing.view import Policy, View, _hash64


class BoundedHash(Policy, key='bounded_hash', label='Bounded-load hash',
                  rule='hashes the system prompt to a replica, walking on past any replica over its load bound',
                  help=('Consistent hashing, but a replica already carrying more than its share passes the request '
                        'to the next one on the ring.'),
                  brief='the pinned replica, unless it carries more than its share.'):
    """Consistent hashing with bounded loads: the affinity key's replica, unless it is full.

    No replica may hold more than ceil(c x (in flight + 1) / replicas)
    requests, c = `router.load_factor`: a request walks the ring from its
    key's point to the first replica under that bound. Source: Mirrokni,
    Thorup and Zadimoghaddam, "Consistent Hashing with Bounded Loads" (SODA
    2018); c = 1.25 is the commonly deployed setting (HAProxy's
    `hash-balance-factor 125`, off unless set). The ring is `ConsistentHash`'s.
    """

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

    def scores(self, view: View) -> tuple[str, list[float]]:
        """What it compares, per replica (the hindsight explainer's table)."""
        return (f"in flight: the ring's first replica under {self.bound(view)} wins",
                view.per_replica(view.in_flight))


POLICY = BoundedHash  # what this file adds to the registry (model/routing/kinds.py)
