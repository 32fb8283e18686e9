"""Pick the replica with the least backlog in seconds."""

from __future__ import annotations

from model.routing.view import Policy, View


class LeastLoaded(Policy, key='least_loaded', label='Least loaded', rule='picks the replica with the least queued work',
                  help='Sends each request to the replica with the shortest backlog.',
                  brief='the replica with the shortest backlog.'):
    """Pick the replica with the least backlog in seconds."""

    def choose(self, view: View) -> int:
        return view.least_loaded()

    def scores(self, view: View) -> tuple[str, list[float]]:
        """What it compares, per replica (the hindsight explainer's table)."""
        return "backlog (s): least wins", view.per_replica(view.backlog)


POLICY = LeastLoaded  # what this file adds to the registry (model/routing/kinds.py)
