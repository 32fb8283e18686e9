"""A radix tree of cached prefixes with a token capacity and LRU leaf eviction.

A sequence is two parallel tuples: `keys` (any hashable, compared for
equality: prompt segments now, fixed-size token blocks later) and `sizes`
(tokens each key stands for). An edge holds a run of keys; a node's `tokens`
is the sum of its run's sizes. The root holds nothing and is never evicted.

Invariants, checked by `check_invariants()`:
- `total_tokens <= capacity`, and it equals the sum of every node's tokens;
- `locked_tokens` is the sum over nodes with `lock_ref > 0`; a locked node's
  parent is locked too (locks cover a whole path from the root);
- only unlocked leaves are evicted, least recently used first, so a shared
  trunk outlives the twigs hanging off it.

With a fleet's `FirstKeys` index given (`model/holders.py`), the tree notes
there each child it hangs off its root or evicts from it, under its bit, so
that a router peeks only the trees that can hold some of a prompt.

Recency is a counter (`Clock`) bumped on every touch, never a wall clock, so
ties cannot happen and runs are reproducible. Each tree has its own unless
trees are given one to share (`model.studies.tree` does, to note when every tree was
touched with one number per event): a shared clock only leaves gaps between
one tree's stamps, and eviction compares a tree's stamps with each other
alone, so it evicts the same leaves in the same order.
"""

import heapq
import itertools
from collections.abc import Hashable, Sequence

from model.holders import FirstKeys

__all__ = ["Clock", "Node", "RadixTree"]


class Clock:
    """A recency counter: `now` is the stamp of the latest touch of any tree that reads this clock."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0


class Node:
    """One edge of the tree: a run of keys, their sizes and who holds them."""

    __slots__ = ("parent", "children", "keys", "sizes", "tokens", "lock_ref", "stamp", "alive")

    def __init__(self, parent: "Node | None", keys: tuple, sizes: tuple, stamp: int, tokens: int) -> None:
        self.parent = parent
        self.children: dict[Hashable, Node] = {}  # first key of the child's run -> child
        self.keys = keys
        self.sizes = sizes
        self.tokens = tokens  # sum(sizes), which the caller has worked out
        self.lock_ref = 0  # queued or running requests using this node
        self.stamp = stamp  # recency: the tree's counter at the last touch
        self.alive = True  # False once evicted (stale heap entries check it)


class RadixTree:
    """Prefix cache of one replica, holding at most `capacity` tokens."""

    __slots__ = ("capacity", "root", "total_tokens", "locked_tokens", "evicted_tokens", "clock", "heads", "bit",
                 "_heap", "_nodes", "_seq")

    def __init__(self, capacity: int, clock: Clock | None = None, heads: FirstKeys | None = None,
                 bit: int = 0) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be 0 or more tokens, got {capacity}")
        self.capacity = capacity
        self.root = Node(None, (), (), 0, 0)
        self.root.lock_ref = 1  # the root is never a candidate for eviction
        self.total_tokens = 0
        self.locked_tokens = 0
        self.evicted_tokens = 0  # every token evicted so far
        self.clock = Clock() if clock is None else clock  # stamps touches; may be shared with other trees
        self.heads = heads  # the fleet's index of which trees have which root children, kept in step; or None
        self.bit = bit  # this tree's bit in `heads` (1 << replica)
        self._heap: list[tuple[int, int, Node]] = []  # (stamp, seq, node) of unlocked leaves, lazily pruned
        self._nodes = 0
        self._seq = itertools.count()  # orders heap entries without comparing nodes

    @property
    def evictable_tokens(self) -> int:
        return self.total_tokens - self.locked_tokens

    # -- look-ups ---------------------------------------------------------
    def peek(self, keys: Sequence[Hashable]) -> int:
        """Tokens of the longest cached prefix of `keys`; changes nothing.

        `_walk`'s descent without its touches and splits (routers peek many trees for every request): an
        edge whose keys all match is compared as one slice.
        """
        keys = tuple(keys)  # the same object if it is one already: its slices compare with an edge's keys
        node, i, matched, n = self.root, 0, 0, len(keys)
        while i < n:
            child = node.children.get(keys[i])
            if child is None:
                return matched
            ck = child.keys
            m = len(ck)
            if m > 1 and keys[i:i + m] != ck:  # a partial match: count the keys that do
                j, end = 1, min(m, n - i)
                while j < end and ck[j] == keys[i + j]:
                    j += 1
                return matched + sum(child.sizes[:j])
            matched += child.tokens
            node, i = child, i + m
        return matched

    def insert(self, keys: Sequence[Hashable], sizes: Sequence[int], start: Node | None = None,
               at: int = 0) -> tuple[Node, int]:
        """Cache `keys`, evicting LRU leaves for room; returns (deepest node, tokens added).

        If even eviction cannot make room (the rest is locked or the capacity is
        small), only the prefix that fits is cached: capacity is never exceeded.
        `start`, if given, is a node the caller holds locked that ends exactly at
        `keys[:at]` (as `find` returned it): the walk goes on from there instead
        of from the root, which changes nothing but the work.
        """
        node, i, _ = self._walk(keys, start, at)
        return self._attach(node, keys, sizes, i)

    def _attach(self, node: Node, keys: Sequence[Hashable], sizes: Sequence[int], i: int) -> tuple[Node, int]:
        """Hang `keys[i:]` below `node` (which ends at `keys[:i]`), as much as fits."""
        if i == len(keys):
            return node, 0
        need = sum(sizes[i:])
        free = self.capacity - self.total_tokens
        if need > free:
            self.lock(node)  # keep the attach point while making room
            self.evict(need - free)
            self.unlock(node)
            free = self.capacity - self.total_tokens
        if need <= free:  # all of it fits (the usual case)
            end, added = len(keys), need
        else:  # as many keys as fit
            end, added = i, 0
            while end < len(keys) and added + sizes[end] <= free:
                added += sizes[end]
                end += 1
        if end == i:
            return node, 0
        clock = self.clock
        clock.now += 1
        leaf = Node(node, tuple(keys[i:end]), tuple(sizes[i:end]), clock.now, added)
        node.children[keys[i]] = leaf
        if node is self.root and self.heads is not None:
            self.heads.add(keys[i], self.bit)
        self.total_tokens += added
        self._nodes += 1
        self._push(leaf)
        return leaf, added

    # -- locks ------------------------------------------------------------
    def lock(self, node: Node) -> None:
        """Pin `node` and its ancestors: a request is queued or running on them."""
        while node is not self.root:
            if node.lock_ref == 0:
                self.locked_tokens += node.tokens
            node.lock_ref += 1
            node = node.parent  # type: ignore[assignment]

    def unlock(self, node: Node) -> None:
        """Release a `lock(node)`; nodes whose count reaches zero become evictable."""
        while node is not self.root:
            if node.lock_ref <= 0:
                raise RuntimeError("unlock without a matching lock")
            node.lock_ref -= 1
            if node.lock_ref == 0:
                self.locked_tokens -= node.tokens
                if not node.children:
                    self._push(node)
            node = node.parent  # type: ignore[assignment]

    # -- eviction ---------------------------------------------------------
    def evict(self, tokens: int) -> int:
        """Drop LRU unlocked leaves until `tokens` are freed or none is left; returns freed."""
        freed, heap = 0, self._heap
        while freed < tokens and heap:
            stamp, _, node = heapq.heappop(heap)
            if not node.alive or node.children or node.lock_ref or node.stamp != stamp:
                continue  # stale entry: touched, locked, split or gone since it was pushed
            parent = node.parent
            del parent.children[node.keys[0]]  # type: ignore[union-attr]
            if parent is self.root and self.heads is not None:
                self.heads.drop(node.keys[0], self.bit)
            node.alive = False
            self.total_tokens -= node.tokens
            self._nodes -= 1
            freed += node.tokens
            if parent is not self.root and not parent.children and not parent.lock_ref:  # type: ignore[union-attr]
                self._push(parent)  # type: ignore[arg-type]
        self.evicted_tokens += freed
        return freed

    # -- internals --------------------------------------------------------
    def _walk(self, keys: Sequence[Hashable], start: Node | None = None, at: int = 0) -> tuple[Node, int, int]:
        """`_descend`, then the node it ends at filed in LRU order if it is an unlocked leaf (its stamp changed)."""
        node, i, matched = self._descend(keys, start, at)
        if node is not self.root and not node.children and not node.lock_ref:
            self._push(node)
        return node, i, matched

    find = _walk  # the public name: replicas look up every request's prefix with it

    def find_locked(self, keys: Sequence[Hashable]) -> tuple[Node, int, int]:
        """`find(keys)`, then `lock` the node it ends at: what a replica does with every request it queues.

        A node about to be locked is no candidate for eviction, so it is not filed in LRU order (`unlock`
        files it when it is free again); evictions, and so the tree, are the same as `find` then `lock`.
        The path is stamped and locked in one walk up.
        """
        node, i, matched = self._reach(keys, None, 0)
        clock = self.clock
        clock.now += 1
        stamp, up, root, locked = clock.now, node, self.root, 0
        while up is not root:
            up.stamp = stamp
            if up.lock_ref == 0:
                locked += up.tokens
            up.lock_ref += 1
            up = up.parent  # type: ignore[assignment]
        self.locked_tokens += locked
        return node, i, matched

    def insert_unlocking(self, keys: Sequence[Hashable], sizes: Sequence[int], lock: Node, at: int) -> None:
        """`insert(keys, sizes, lock, at)` then `unlock(lock)`: what a replica does when a request's prefill ends
        (`lock` is the node its `find_locked` returned, ending at `keys[:at]`).

        The same tree as the two calls: the path above `lock` is stamped as it is unlocked, after the new
        leaf is hung, which reads none of those stamps (those nodes are locked until then, so no eviction
        can take them or file them).
        """
        node, i, _ = self._reach(keys, lock, at)
        clock = self.clock
        clock.now += 1
        stamp, up = clock.now, node
        while up is not lock:  # below the lock (a longer match than when it was queued): not locked by this request
            up.stamp = stamp
            up = up.parent  # type: ignore[assignment]
        if node is not lock and not node.children and not node.lock_ref:
            self._push(node)
        self._attach(node, keys, sizes, i)
        root = self.root
        while lock is not root:
            lock.stamp = stamp
            if lock.lock_ref <= 0:
                raise RuntimeError("unlock without a matching lock")
            lock.lock_ref -= 1
            if lock.lock_ref == 0:
                self.locked_tokens -= lock.tokens
                if not lock.children:
                    self._push(lock)
            lock = lock.parent  # type: ignore[assignment]

    def _descend(self, keys: Sequence[Hashable], start: Node | None, at: int) -> tuple[Node, int, int]:
        """The node ending the longest cached prefix, with keys and tokens matched; touches the path.

        A partly matched edge is split, so the node ends exactly at the match. The one walk that changes
        the tree, shared by `find` and `insert` (`peek` walks the same way without changing anything).
        From `start` (a node ending at `keys[:at]`; tokens are then counted from it), the walk is the one
        from the root, less the descent to `start`.
        """
        node, i, matched = self._reach(keys, start, at)
        clock = self.clock
        clock.now += 1
        stamp, touched, root = clock.now, node, self.root
        while touched is not root:
            touched.stamp = stamp
            touched = touched.parent  # type: ignore[assignment]
        return node, i, matched

    def _reach(self, keys: Sequence[Hashable], start: Node | None, at: int) -> tuple[Node, int, int]:
        """`_descend` without its touches: the walk down, splitting a partly matched edge. Reads no stamp or
        clock, so its callers may stamp the path after it."""
        keys = tuple(keys)  # the same object if it is one already: its slices compare with an edge's keys
        node, i, matched, n = self.root if start is None else start, at, 0, len(keys)
        while i < n:
            child = node.children.get(keys[i])
            if child is None:
                break
            ck = child.keys
            m = len(ck)
            if m > 1 and keys[i:i + m] != ck:  # not the whole edge: split it where it parts
                j, end = 1, min(m, n - i)
                while j < end and ck[j] == keys[i + j]:
                    j += 1
                node = self._split(child, j)
                return node, i + j, matched + node.tokens
            matched += child.tokens
            node, i = child, i + m
        return node, i, matched

    def _split(self, node: Node, pos: int) -> Node:
        """Cut `node`'s run after `pos` keys; returns the new upper half."""
        parent = node.parent
        upper = Node(parent, node.keys[:pos], node.sizes[:pos], node.stamp, sum(node.sizes[:pos]))
        upper.lock_ref = node.lock_ref  # the same requests hold both halves
        upper.children[node.keys[pos]] = node
        parent.children[node.keys[0]] = upper  # type: ignore[union-attr]
        node.parent = upper
        node.keys, node.sizes = node.keys[pos:], node.sizes[pos:]
        node.tokens -= upper.tokens
        self._nodes += 1
        return upper

    def _push(self, node: Node) -> None:
        heapq.heappush(self._heap, (node.stamp, next(self._seq), node))
        if len(self._heap) > 4 * self._nodes + 64:
            self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        """Drop stale entries: keep one per unlocked leaf."""
        self._heap = [(n.stamp, next(self._seq), n) for n in self.nodes() if not n.children and not n.lock_ref]
        heapq.heapify(self._heap)

    def nodes(self) -> list[Node]:
        """Every node but the root, parents before children."""
        out, stack = [], list(self.root.children.values())
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(node.children.values())
        return out

    def check_invariants(self) -> None:
        """Raise AssertionError if any invariant of the module docstring fails."""
        nodes = self.nodes()
        total = sum(n.tokens for n in nodes)
        locked = sum(n.tokens for n in nodes if n.lock_ref > 0)
        assert total == self.total_tokens, (total, self.total_tokens)
        assert locked == self.locked_tokens, (locked, self.locked_tokens)
        assert self.total_tokens <= self.capacity, (self.total_tokens, self.capacity)
        assert len(nodes) == self._nodes, (len(nodes), self._nodes)
        for n in nodes:
            assert n.alive and n.keys and len(n.keys) == len(n.sizes)
            assert n.tokens == sum(n.sizes)
            assert n.parent is not None and n.parent.children.get(n.keys[0]) is n
            assert n.lock_ref >= 0
            if n.lock_ref > 0 and n.parent is not self.root:
                assert n.parent.lock_ref >= n.lock_ref, "a locked node's parent must be locked"
            for key, child in n.children.items():
                assert child.keys[0] == key
        leaves = {id(n) for n in nodes if not n.children and not n.lock_ref}
        filed = {id(node) for stamp, _, node in self._heap if node.alive and node.stamp == stamp}
        assert leaves <= filed, "an evictable leaf is missing from the LRU heap"
