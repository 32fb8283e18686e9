"""Pin each affinity key (for chat, the system prompt) to a replica on a hash ring."""

from __future__ import annotations

from bisect import bisect_right

from model.config import Scenario
from model.routing.view import Policy, View, _hash64


class ConsistentHash(Policy, key='consistent_hash', label='Consistent hash',
                     rule='pins each system prompt to one replica by hashing it, whatever the load',
                     help=('Always sends a system prompt to the same replica (its place on a hash ring), however '
                           'busy that replica is.'),
                     brief='each system prompt pinned to one replica, however busy.'):
    """Pin each affinity key (for chat, the system prompt) to a replica on a hash ring.

    Each replica owns `VNODES` points on a ring of 64-bit BLAKE2b hashes; a
    request goes to the first point at or after its affinity key's hash.
    Same key, same replica; adding a replica moves only the keys that land
    on its new points. Load plays no part.
    """

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


POLICY = ConsistentHash  # what this file adds to the registry (model/routing/kinds.py)
