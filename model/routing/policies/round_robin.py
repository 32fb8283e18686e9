"""Send request n to replica n mod replicas, whatever they hold or carry."""

from __future__ import annotations

from model.config import Scenario
from model.routing.view import Policy, View


class RoundRobin(Policy, key='round_robin', label='Round robin', rule='takes turns, ignoring caches and load',
                 help='Takes turns: request n goes to replica n mod the number of replicas.',
                 brief='takes turns, whatever each replica holds or carries.'):
    """Send request n to replica n mod replicas, whatever they hold or carry."""

    def __init__(self, scenario: Scenario) -> None:
        self.cursor = 0

    def choose(self, view: View) -> int:
        index = self.cursor % len(view)
        self.cursor += 1
        return index


POLICY = RoundRobin  # what this file adds to the registry (model/routing/kinds.py)
