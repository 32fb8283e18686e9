"""Send request n to replica n mod replicas, whatever they hold or carry."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from model.routing.view import View

if TYPE_CHECKING:
    from model.config import Scenario

__all__ = ['RoundRobin']


class RoundRobin:
    """Send request n to replica n mod replicas, whatever they hold or carry."""

    key: ClassVar[str] = "round_robin"
    label: ClassVar[str] = "Round robin"
    rule: ClassVar[str] = "takes turns, ignoring caches and load"
    help: ClassVar[str] = 'Takes turns: request n goes to replica n mod the number of replicas.'
    brief: ClassVar[str] = 'takes turns, whatever each replica holds or carries.'

    def __init__(self, scenario: Scenario) -> None:
        self.cursor = 0

    def choose(self, view: View) -> int:
        index = self.cursor % len(view)
        self.cursor += 1
        return index


POLICY = RoundRobin  # what this file adds to the registry (model/routing/kinds.py)
