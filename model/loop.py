"""A discrete-event loop: a heap of `(time, priority, seq, action, args)`.

`seq` comes from a per-loop counter, so events at the same time and priority
run in the order they were scheduled; a lower priority number runs first.
Time only moves forward: scheduling into the past is an error. This is the
only code that touches the heap: engines schedule with `at` (or `push`, where
the time cannot be past), and a caller that must look between events steps
with `peek` and `step`.
"""

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Any

__all__ = ["ARRIVE", "FINISH", "SAMPLE", "START", "STEP", "EventLoop"]

FINISH, ARRIVE, START, SAMPLE = 0, 1, 2, 3  # event priorities at one instant: lower runs first
STEP = FINISH  # serving mode: a step's end, like a prefill's end, comes before arrivals at the same time
# START: serving mode, an idle replica starting its next step once every arrival of the instant is in


class EventLoop:
    """Runs scheduled actions in time order; `now` is the time of the current one."""

    __slots__ = ("now", "_heap", "_seq")

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, int, Callable[..., Any], tuple]] = []
        self._seq = itertools.count()

    def at(self, time: float, priority: int, action: Callable[..., Any], *args: Any) -> None:
        """Run `action(*args)` at `time`; among equal times, lower `priority` first."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time}, before now ({self.now})")
        heapq.heappush(self._heap, (time, priority, next(self._seq), action, args))

    def push(self, time: float, priority: int, action: Callable[..., Any], args: tuple) -> None:
        """`at(time, priority, action, *args)` for a time its caller knows is not past: a hot path's, unchecked."""
        heapq.heappush(self._heap, (time, priority, next(self._seq), action, args))

    def peek(self) -> float | None:
        """The time of the next scheduled action, or None if there is none."""
        return self._heap[0][0] if self._heap else None

    def step(self) -> None:
        """Run the next scheduled action."""
        time, _, _, action, args = heapq.heappop(self._heap)
        self.now = time
        action(*args)

    def advance(self) -> bool:
        """Run the next scheduled action, if there is one; say whether there was."""
        if not self._heap:
            return False
        self.step()
        return True

    def run(self, until: float = math.inf) -> None:
        """Run actions until none is left or the next one is after `until`."""
        heap, pop = self._heap, heapq.heappop
        while heap and heap[0][0] <= until:  # `step()`, written out: it runs once per event
            time, _, _, action, args = pop(heap)
            self.now = time
            action(*args)

    def run_noting(self, until: float, clock: Any, values: Any, times: list[float]) -> None:
        """`run(until)`, appending `clock.now` to `values` and the event's time to `times` after each event: how a
        caller follows a counter the actions move (`model.studies.tree`: the trees' shared clock) at no call per event."""
        heap, pop = self._heap, heapq.heappop
        note, when = values.append, times.append
        while heap and heap[0][0] <= until:
            time, _, _, action, args = pop(heap)
            self.now = time
            action(*args)
            note(clock.now)
            when(time)

    def __len__(self) -> int:
        return len(self._heap)
