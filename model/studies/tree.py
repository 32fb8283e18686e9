"""One replica's radix tree at a chosen moment of a run, as plain data to draw.

`tree_at(scenario, at_s)` re-runs the scenario from its seed up to `at_s`
(the end of the run by default) and describes every replica's tree then:
each node with its tokens, its parent, when a request last touched it,
whether a queued or running request pins it, and whether it is new since
`at_s - recent_s`. Tokens cached at `at_s - recent_s` and gone at `at_s` are
counted as evicted, per branch off the root. The run is the one `simulate`
would make (same events in the same order), so nothing it measures changes;
it is only stopped early and looked at.

A node is named by the prefix it ends (its keys from the root), interned as
one small integer per key, so a node split since the earlier moment is still
recognised as old. Lab and serving mode both work: each replica has a tree.
Each replica's snapshot is worked out when it is first read (the page shows
one tree at a time): the run keeps a plain copy of every tree at the earlier
moment, and its trees do not change once it has stopped.
"""

from array import array
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import NamedTuple, overload

from model.config import Scenario
from model.metrics import Result
from model.radix import Clock, Node, RadixTree
from model.run import AnyRun, start
from model.sources.traffic import Request

__all__ = ["TreeNode", "TreeSnapshot", "simulate_with_trees", "tree_at"]


class TreeNode(NamedTuple):
    """One node of a snapshot; `parent` is an index into the snapshot's nodes, -1 for the root's children."""

    parent: int
    first_key: Hashable  # the first key of the node's run (what it is: a system prompt, a turn, an answer)
    keys: int  # keys in its run
    tokens: int
    last_hit_s: float  # when a request last matched or cached it
    pinned: bool  # held by a queued or running request
    new: bool  # not cached `recent_s` before the snapshot


class TreeSnapshot(NamedTuple):
    """A replica's tree at `at_s`: nodes parents first, and what was evicted in the `recent_s` before."""

    replica: int
    at_s: float
    recent_s: float
    capacity: int
    total_tokens: int  # equals the sum of the nodes' tokens
    pinned_tokens: int
    nodes: tuple[TreeNode, ...]
    evicted_tokens: int  # cached at at_s - recent_s, gone at at_s
    evicted_by_branch: tuple[tuple[Hashable, int], ...]  # (first key of the root's child, tokens), largest first


class _Prefixes:
    """Interns prefixes: (id of the prefix before, key) -> id, so a prefix is one int whatever the tree's shape."""

    __slots__ = ("ids",)

    def __init__(self) -> None:
        self.ids: dict[tuple[int, Hashable], int] = {}

    def of(self, before: int, key: Hashable) -> int:
        got = self.ids.get((before, key))
        if got is None:
            got = self.ids[(before, key)] = len(self.ids) + 1
        return got

    def cached(self, shape: list[tuple[tuple, tuple, int]]) -> dict[int, tuple[Hashable, int]]:
        """Every prefix id a tree held (its `_shape` then) -> (first key of its branch off the root, tokens of its
        last key)."""
        out: dict[int, tuple[Hashable, int]] = {}
        ends: list[int] = []  # node -> the id of the prefix it ends
        branches: list[Hashable] = []  # node -> the first key of its branch
        for keys, sizes, parent in shape:
            before, branch = (0, keys[0]) if parent < 0 else (ends[parent], branches[parent])
            for key, size in zip(keys, sizes):
                before = self.of(before, key)
                out[before] = (branch, size)
            ends.append(before)
            branches.append(branch)
        return out


def _shape(tree: RadixTree) -> list[tuple[tuple, tuple, int]]:
    """Every node of `tree` as it is now, parents first: (keys, sizes, index of its parent here or -1). A copy
    of what the tree figure reads of an earlier moment, costing a tuple a node (`_Prefixes.cached` reads it)."""
    out: list[tuple[tuple, tuple, int]] = []
    stack: list[tuple[Node, int]] = [(n, -1) for n in tree.root.children.values()]
    while stack:
        node, parent = stack.pop()
        out.append((node.keys, node.sizes, parent))
        me = len(out) - 1
        stack.extend((c, me) for c in node.children.values())
    return out


class _Snapshots(Sequence[TreeSnapshot]):
    """Every replica's snapshot of one stopped run, each worked out when it is first read: the tree figure shows
    one replica at a time. Equal to the tuple of them all."""

    __slots__ = ("_made", "_make")

    def __init__(self, count: int, make: Callable[[int], TreeSnapshot]) -> None:
        self._made: list[TreeSnapshot | None] = [None] * count
        self._make = make

    def __len__(self) -> int:
        return len(self._made)

    @overload
    def __getitem__(self, i: int) -> TreeSnapshot: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[TreeSnapshot, ...]: ...

    def __getitem__(self, i: int | slice) -> TreeSnapshot | tuple[TreeSnapshot, ...]:
        if isinstance(i, slice):
            return tuple(self[k] for k in range(len(self._made))[i])
        k = range(len(self._made))[i]  # IndexError past the end, as a tuple's
        made = self._made[k]
        if made is None:
            made = self._made[k] = self._make(k)
        return made

    def __eq__(self, other: object) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list's: equal to a tuple, it may not hash as one


def tree_at(scenario: Scenario, at_s: float | None = None, recent_s: float | None = None,
            requests: Iterable[Request] | None = None, limit: int | None = None) -> tuple[TreeSnapshot, ...]:
    """Every replica's tree at `at_s` (None: once the last request is served), one snapshot each.

    `recent_s` (default: a twentieth of the run's window) is how far back "recently hit", "new" and
    "evicted" look; with `at_s` None they look back from the end of the window, `duration_s`. `requests` and `limit` are `simulate`'s.
    """
    run: AnyRun = start(scenario, requests, limit)
    return tuple(_stepped(run, scenario, at_s, recent_s))


def simulate_with_trees(scenario: Scenario, limit: int | None = None, requests: Iterable[Request] | None = None
                        ) -> tuple[Result, Sequence[TreeSnapshot]]:
    """`simulate(scenario, requests, limit)` and `tree_at(scenario, requests=requests, limit=limit)` from one run
    instead of two: equal to both. The snapshots are worked out when first read (the page draws one tree at a
    time), from the run's trees, which nothing touches once it has stopped."""
    run: AnyRun = start(scenario, requests, limit)
    trees = _stepped(run, scenario, None, None)
    return run.finish(), trees  # every event has run: finish() only measures


def _stepped(run: AnyRun, scenario: Scenario, at_s: float | None, recent_s: float | None
             ) -> Sequence[TreeSnapshot]:
    """Step `run` up to `at_s` (None: to its end), noting when each tree's clock moved; every tree's snapshot
    (once asked for: the run is over, so its trees no longer change)."""
    recent = scenario.duration_s / 20 if recent_s is None else max(0.0, recent_s)
    loop, replicas = run.loop, run.replicas
    end = float("inf") if at_s is None else max(0.0, at_s)

    # Every tree reads one shared clock from here on (each still evicts in its own order: model/radix.py),
    # so after every event one number says how far all of them have got, noted with the event's time: a
    # node's last touch is the first event after which the clock reached the node's stamp.
    trees = [r.tree for r in replicas]  # replica i is replicas[i]
    if any(t.clock.now or t.root.children for t in trees):
        raise RuntimeError("_stepped needs a run whose trees nothing has touched yet")
    clock = Clock()
    for t in trees:
        t.clock = clock
    ticks = array("i")
    tick_times: list[float] = []

    since = (end if at_s is not None else scenario.duration_s) - recent
    loop.run_noting(min(since, end), clock, ticks, tick_times)  # the trees as they were `recent` before the end
    before = [_shape(t) for t in trees]
    loop.run_noting(end, clock, ticks, tick_times)
    now = loop.now if at_s is None else end

    def snapshot(i: int) -> TreeSnapshot:
        prefixes = _Prefixes()  # a prefix's id is compared within one tree only
        return _snapshot(i, trees[i], now, recent, prefixes.cached(before[i]), prefixes, tick_times, ticks)
    return _Snapshots(len(trees), snapshot)


def _snapshot(index: int, tree: RadixTree, now: float, recent: float, before: dict[int, tuple[Hashable, int]],
              prefixes: _Prefixes, times: list[float], clocks: Sequence[int]) -> TreeSnapshot:
    """`tree` as a snapshot; `clocks[k]` is its clock after the event at `times[k]` (never lower later)."""
    nodes: list[TreeNode] = []
    held: set[int] = set()
    stack: list[tuple[Node, int, int]] = [(n, -1, 0) for n in tree.root.children.values()]
    while stack:
        node, parent, prefix = stack.pop()
        ids = _ids(prefixes, prefix, node.keys)
        first, last = ids[0], ids[-1]
        k = bisect_left(clocks, node.stamp)
        hit = times[min(k, len(times) - 1)] if times else 0.0
        nodes.append(TreeNode(parent, node.keys[0], len(node.keys), node.tokens, round(hit, 6), node.lock_ref > 0,
                              first not in before))
        held.update(ids)
        me = len(nodes) - 1
        stack.extend((c, me, last) for c in node.children.values())
    evicted: dict[Hashable, int] = {}
    for pid, (branch, size) in before.items():
        if pid not in held:
            evicted[branch] = evicted.get(branch, 0) + size
    by_branch = tuple(sorted(evicted.items(), key=lambda kv: (-kv[1], str(kv[0]))))
    return TreeSnapshot(index, round(now, 6), recent, tree.capacity, tree.total_tokens, tree.locked_tokens,
                        tuple(nodes), sum(evicted.values()), by_branch)


def _ids(prefixes: _Prefixes, before: int, keys: tuple) -> list[int]:
    out = []
    for key in keys:
        before = prefixes.of(before, key)
        out.append(before)
    return out
