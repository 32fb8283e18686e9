"""Pick the replica with the least backlog in seconds."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from model.routing.view import View

if TYPE_CHECKING:
    from model.config import Scenario

__all__ = ['LeastLoaded']


class LeastLoaded:
    """Pick the replica with the least backlog in seconds."""

    key: ClassVar[str] = "least_loaded"
    label: ClassVar[str] = "Least loaded"
    rule: ClassVar[str] = "picks the replica with the least queued work"
    help: ClassVar[str] = 'Sends each request to the replica with the shortest backlog.'
    brief: ClassVar[str] = 'the replica with the shortest backlog.'

    def __init__(self, scenario: Scenario) -> None:
        pass

    def choose(self, view: View) -> int:
        return view.least_loaded()

    def scores(self, view: View) -> tuple[str, list[float]]:
        """What it compares, per replica (the hindsight explainer's table)."""
        return "backlog (s): least wins", [round(view.backlog(i), 6) for i in range(len(view))]



POLICY = LeastLoaded  # what this file adds to the registry (model/routing/kinds.py)
