"""Power of two choices: draw two different replicas at random, send to the less loaded."""

from __future__ import annotations

from model.config import Scenario
from model.rng import stream
from model.routing.view import Policy, View


class PowerOfTwo(Policy, key='power_of_two', label='Power of two',
                 rule='draws two replicas at random and takes the less loaded',
                 help='Draws two replicas at random and takes the less busy one.',
                 brief='the less busy of two replicas drawn at random.'):
    """Power of two choices: draw two different replicas at random, send to the less loaded.

    The two come from the scenario seed's `router` stream; the less loaded
    is the one with less backlog (ties as every router breaks them). Source:
    Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing"
    (2001); SGLang's router ships it as `power_of_two`. Caches play no part.
    """

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

    def scores(self, view: View) -> tuple[str, list[float]]:
        """What it compares, per replica (the hindsight explainer's table)."""
        return ("backlog (s): the less loaded of two random replicas wins",
                view.per_replica(view.backlog))


POLICY = PowerOfTwo  # what this file adds to the registry (model/routing/kinds.py)
