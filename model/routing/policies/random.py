"""Pick a replica uniformly at random, from the scenario seed's `router` stream."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from model.rng import stream
from model.routing.view import View

if TYPE_CHECKING:
    from model.config import Scenario

__all__ = ['RandomChoice']


class RandomChoice:
    """Pick a replica uniformly at random, from the scenario seed's `router` stream."""

    key: ClassVar[str] = "random"
    label: ClassVar[str] = "Random"
    rule: ClassVar[str] = "picks any replica at random"
    help: ClassVar[str] = 'Picks any replica at random.'
    brief: ClassVar[str] = 'any replica, at random.'

    def __init__(self, scenario: Scenario) -> None:
        self.rng = stream(scenario.seed, "router")

    def choose(self, view: View) -> int:
        return self.rng.randrange(len(view))


POLICY = RandomChoice  # what this file adds to the registry (model/routing/kinds.py)
