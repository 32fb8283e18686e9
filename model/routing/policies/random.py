"""Pick a replica uniformly at random, from the scenario seed's `router` stream."""

from __future__ import annotations

from model.config import Scenario
from model.rng import stream
from model.routing.view import Policy, View


class RandomChoice(Policy, key='random', label='Random', rule='picks any replica at random',
                   help='Picks any replica at random.', brief='any replica, at random.'):
    """Pick a replica uniformly at random, from the scenario seed's `router` stream."""

    def __init__(self, scenario: Scenario) -> None:
        self.rng = stream(scenario.seed, "router")

    def choose(self, view: View) -> int:
        return self.rng.randrange(len(view))


POLICY = RandomChoice  # what this file adds to the registry (model/routing/kinds.py)
