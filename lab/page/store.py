"""What the page's view code remembers, in one object: a named cache each, bounded, keyed by what it depends on.

The worker answers change after change in one interpreter, so the view keeps
recent runs, answers, traffic, drawings, trees and stall demos to answer a
slider dragged back without computing again. Each is a `Cache` of `STORE`,
with the number it keeps beside it, and each key is everything its value
depends on (a run's is `model.run_key`: the keys a run reads, as the model
declares them). Nothing else in the page's code keeps a value from one answer
to the next; `STORE.forget()` drops it all but the answers (which the memory
snapshot keeps its first one of), and tests look through the same methods.
"""

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["STORE", "Cache", "Store"]

V = TypeVar("V")


class Cache(Generic[V]):
    """The last `kept` values by key, the least recently used dropped first."""

    __slots__ = ("name", "kept", "_values")

    def __init__(self, name: str, kept: int) -> None:
        self.name, self.kept = name, kept
        self._values: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        """The value kept for `key` (now the most recently used), or None."""
        value = self._values.get(key)
        if value is not None:
            self._values.move_to_end(key)
        return value

    def put(self, key: Hashable, value: V) -> V:
        """Keep `value` for `key` as the most recently used; drop the oldest past `kept`."""
        self._values[key] = value
        self._values.move_to_end(key)
        while len(self._values) > self.kept:
            self._values.popitem(last=False)
        return value

    def remember(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept for `key`, else `make()`'s, kept."""
        found = self.get(key)
        return self.put(key, make()) if found is None else found

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> Iterator[Hashable]:
        """The keys kept, oldest first."""
        return iter(list(self._values))

    def values(self) -> Iterator[V]:
        """The values kept, oldest first."""
        return iter(list(self._values.values()))

    def clear(self) -> None:
        self._values.clear()


class Store:
    """Every memo of the page's view code (see the module's docstring), and the work list of answers ahead."""

    RUNS_KEPT = 4  # recent runs (each holds its requests' records: a few MB)
    ANSWERS_KEPT = 48  # recent answers, as JSON text (65-100 kB each: 3-5 MB in all)
    TRAFFIC_KEPT = 2  # recent synthetic traffics (a replicas or router change keeps the traffic)
    DRAWN_KEPT = 2  # recent drawings per figure (one may hold a run alive beyond RUNS_KEPT)
    TREES_KEPT = 6  # recent trees at a moment: moving the replica or back to a moment re-runs nothing
    JOINS_KEPT = 8  # stall demos: dragging the prefill slider back recomputes nothing
    SWEEPS_KEPT = 2  # parsed mission-sweep files
    DERIVED_KEPT = 4  # results whose derived values each `per_result` function remembers (an answer draws two runs)
    TEXTS_KEPT = 256  # figure patches' JSON text (the drawings above have about 150 patches between them)

    def __init__(self) -> None:
        self.runs: Cache[Any] = Cache("runs", self.RUNS_KEPT)  # model.run_key -> Result; ("trace", ...) -> TraceRun
        self.answers: Cache[str] = Cache("answers", self.ANSWERS_KEPT)  # the view's state key -> the answer's JSON
        self.traffic: Cache[tuple] = Cache("traffic", self.TRAFFIC_KEPT)  # (traffic_key, limit) -> requests
        self.trees: Cache[Sequence] = Cache("trees", self.TREES_KEPT)  # (run key, moment) -> TreeSnapshots
        self.joins: Cache[dict] = Cache("joins", self.JOINS_KEPT)  # the keys the stall demo reads -> its figures
        self.sweeps: Cache[dict] = Cache("sweeps", self.SWEEPS_KEPT)  # (file name, size) -> distributions by mission
        self.texts: Cache[tuple] = Cache("texts", self.TEXTS_KEPT)  # id(patch) -> (patch, its JSON text or None)
        self._drawn: dict[str, Cache[tuple]] = {}  # figure -> its drawings: key -> (run, data, caption)
        self._derived: dict[str, Cache[tuple]] = {}  # function -> id(result) -> (result, value)
        self.warm: list[str] = []  # requests the view plans to answer ahead of time (JSON text), next first

    def drawn(self, figure: str) -> Cache[tuple]:
        """The drawings of one figure, `DRAWN_KEPT` of them."""
        found = self._drawn.get(figure)
        if found is None:
            found = self._drawn[figure] = Cache(f"drawn:{figure}", self.DRAWN_KEPT)
        return found

    def derived(self, name: str) -> Cache[tuple]:
        """What function `name` derived from recent results, by the result's identity (see `per_result`)."""
        found = self._derived.get(name)
        if found is None:
            found = self._derived[name] = Cache(f"derived:{name}", self.DERIVED_KEPT)
        return found

    def caches(self) -> list[Cache[Any]]:
        """Every cache, named."""
        return [self.runs, self.answers, self.traffic, self.trees, self.joins, self.sweeps, self.texts,
                *self._drawn.values(), *self._derived.values()]

    def sizes(self) -> dict[str, int]:
        """How many values each cache holds, by name."""
        return {c.name: len(c) for c in self.caches()}

    def forget_drawings(self) -> None:
        """Drop every figure's drawings, so that the next answer draws each figure again."""
        for cache in self._drawn.values():
            cache.clear()

    def forget(self) -> None:
        """Drop every run, drawing, tree, demo and derived value (and with them the results they hold), keeping
        the answers and the work list: what `lab.page.view.keep_first_answer` leaves in the memory snapshot."""
        for cache in self.caches():
            if cache is not self.answers:
                cache.clear()

    def clear(self) -> None:
        """Drop everything, answers and plans too: a fresh worker's store."""
        for cache in self.caches():
            cache.clear()
        self.warm.clear()


STORE = Store()
