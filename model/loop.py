"""A discrete-event loop: a heap of `(time, priority, seq, action, args)`, and a feed of given items.

`seq` comes from a per-loop counter, so events at the same time and priority
run in the order they were scheduled; a lower priority number runs first.
Time only moves forward: scheduling into the past is an error. This is the
only code that touches the heap: engines schedule with `at` (or `push`, where
the time cannot be past) or hand over a run's given requests with `feed`,
and a caller that must look between events steps with `peek` and `step`.

A feed's items come in time order: the loop holds only the next one, as the
event it would be on the heap (its `seq` drawn when the one before it runs,
as an action scheduling its successor first would draw it), and takes it
whenever it sorts before the heap's first. So the order of events is the
heap's own, and an arrival costs no push or pop.
"""

import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ARRIVE", "FINISH", "SAMPLE", "START", "STEP", "EventLoop"]

FINISH, ARRIVE, START, SAMPLE = 0, 1, 2, 3  # event priorities at one instant: lower runs first
STEP = FINISH  # serving mode: a step's end, like a prefill's end, comes before arrivals at the same time
# START: serving mode, an idle replica starting its next step once every arrival of the instant is in


class EventLoop:
    """Runs scheduled actions in time order; `now` is the time of the current one."""

    __slots__ = ("now", "_heap", "_seq", "_feed", "_head", "_time_of")

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, int, Callable[..., Any], tuple]] = []
        self._seq = itertools.count()
        self._feed: Iterator[Any] = iter(())  # the fed items after `_head`'s, in time order
        self._head: tuple[float, int, int, Callable[..., Any], tuple] | None = None  # the feed's next event
        self._time_of: Callable[[Any], float] = float

    def at(self, time: float, priority: int, action: Callable[..., Any], *args: Any) -> None:
        """Run `action(*args)` at `time`; among equal times, lower `priority` first."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time}, before now ({self.now})")
        heapq.heappush(self._heap, (time, priority, next(self._seq), action, args))

    def push(self, time: float, priority: int, action: Callable[..., Any], args: tuple) -> None:
        """`at(time, priority, action, *args)` for a time its caller knows is not past: a hot path's, unchecked."""
        heapq.heappush(self._heap, (time, priority, next(self._seq), action, args))

    def feed(self, items: Iterator[Any], time_of: Callable[[Any], float], priority: int,
             action: Callable[[Any], Any]) -> None:
        """Run `action(item)` at `time_of(item)` for every item, in the order given (call once, before running):
        as if each item's action scheduled the next one's with `at` before doing anything else, so an item
        earlier than the one before it raises as `at` does, when the one before it runs."""
        self._feed, self._time_of = items, time_of
        self._head = None
        first = next(items, None)
        if first is not None:
            self._head = (time_of(first), priority, next(self._seq), action, (first,))

    def _next(self, until: float) -> tuple[float, int, int, Callable[..., Any], tuple] | None:
        """Take the next event if it is at or before `until`: the feed's held one or the heap's first."""
        heap, head = self._heap, self._head
        if head is not None and (not heap or head < heap[0]):
            if head[0] > until:
                return None
            following = next(self._feed, None)  # drawn in its place (`now` is not moved yet)
            if following is None:
                self._head = None
            else:
                time = self._time_of(following)
                if time < head[0]:
                    raise ValueError(f"cannot schedule at {time}, before now ({head[0]})")
                self._head = (time, head[1], next(self._seq), head[3], (following,))
            return head
        if heap and heap[0][0] <= until:
            return heapq.heappop(heap)
        return None

    def peek(self) -> float | None:
        """The time of the next scheduled action, or None if there is none."""
        heap, head = self._heap, self._head
        if head is not None and (not heap or head < heap[0]):
            return head[0]
        return heap[0][0] if heap else None

    def step(self) -> None:
        """Run the next scheduled action."""
        event = self._next(math.inf)
        if event is None:
            raise IndexError("step() with nothing scheduled")
        self.now = event[0]
        event[3](*event[4])

    def advance(self) -> bool:
        """Run the next scheduled action, if there is one; say whether there was."""
        event = self._next(math.inf)
        if event is None:
            return False
        self.now = event[0]
        event[3](*event[4])
        return True

    def run(self, until: float = math.inf) -> None:
        """Run actions until none is left or the next one is after `until`."""
        take = self._next
        while (event := take(until)) is not None:
            self.now = event[0]
            event[3](*event[4])

    def run_noting(self, until: float, clock: Any, values: Any, times: list[float]) -> None:
        """`run(until)`, appending `clock.now` to `values` and the event's time to `times` after each event: how a
        caller follows a counter the actions move (`model.studies.tree`: the trees' shared clock) with no callback."""
        take, note, when = self._next, values.append, times.append
        while (event := take(until)) is not None:
            self.now = time = event[0]
            event[3](*event[4])
            note(clock.now)
            when(time)

    def __len__(self) -> int:
        return len(self._heap) + (self._head is not None)
