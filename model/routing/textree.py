"""A router's own prefix tree of the text it routed, tagged by replica: how sgl-router 0.3.2 remembers.

One tree for the whole fleet (the router keeps one per model). Edges are
runs of characters; a node carries, for every replica whose routed text
passed through it, an access stamp from the tree's own counter. The rules,
as the router applies them (`policies/tree.rs`):

- **insert(text, replica)**: walk from the root by first character; a node
  the text only partly matches is split, the new upper part taking over
  the node's replicas and stamps; a replica new to a node is added to it
  with stamp 0 and its characters counted to that replica; the node where
  the text ends (a new leaf, or the last one walked) is stamped with the
  next count.
- **match(text)**: the longest matched run over all replicas' nodes, and
  the replica *at the deepest node reached* (a partly matched node counts):
  the one that created that node, or, once that one has been evicted from
  it, another replica still there (the router takes its hash map's first,
  which varies from run to run; this tree takes the earliest to arrive);
  that replica sticks from then on. The
  counter advances on every match, and one match in eight (the count
  divisible by 8) refreshes that replica's stamp at the node.
- **evict(max_chars)**: every replica holding more than `max_chars`
  characters loses its least recently stamped leaves (a node with no child
  of that replica) until it fits; a parent left without a child of that
  replica becomes a candidate; a node no replica holds any more is removed.

The counter is per tree and starts past the stamps the router spends when
it registers its replicas (one insert of "" each). Ties in stamp order are
broken by the order candidates were found, where the router's own order
(a hash map's) is arbitrary. Characters are Unicode code points, as Rust's
`chars()` counts them.
"""

from __future__ import annotations

import heapq

__all__ = ["TextTree"]


class _Node:
    __slots__ = ("text", "children", "stamps", "first", "parent")

    def __init__(self, text: str, parent: _Node | None, first: int | None) -> None:
        self.text = text
        self.children: dict[str, _Node] = {}  # by first character
        self.stamps: dict[int, int] = {}  # replica -> last access count, in the order replicas arrived
        self.first = first  # the replica a match here names, while it is still here
        self.parent = parent


def _shared(a: str, b: str) -> int:
    """Length of the common prefix of `a` and `b` (a binary search on slices: C speed, log steps)."""
    if b.startswith(a):
        return len(a)
    if a.startswith(b):
        return len(b)
    lo, hi = 0, min(len(a), len(b))  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class TextTree:
    """The router's tree of routed text over `replicas` replicas (see the module docstring)."""

    __slots__ = ("root", "chars", "count")  # count: the tree's access counter, the next stamp it hands out

    def __init__(self, replicas: int) -> None:
        self.root = _Node("", None, None)
        self.chars = [0] * replicas  # characters held, per replica
        self.count = 0
        for r in range(replicas):  # the router registers each replica with an insert of ""
            self.insert("", r)

    def _tick(self) -> int:
        count = self.count
        self.count = count + 1
        return count

    def insert(self, text: str, replica: int) -> None:
        """Note that `text` was routed to `replica`."""
        self.root.stamps.setdefault(replica, 0)
        node, rest = self.root, text
        while rest:
            child = node.children.get(rest[0])
            if child is None:
                leaf = node.children[rest[0]] = _Node(rest, node, replica)
                leaf.stamps[replica] = self._tick()
                self.chars[replica] += len(rest)
                return
            shared = _shared(rest, child.text)
            if shared < len(child.text):  # split: `upper` takes the shared part and the node's replicas
                upper = _Node(child.text[:shared], node, child.first)
                upper.stamps = dict(child.stamps)
                child.text = child.text[shared:]
                child.parent = upper
                upper.children[child.text[0]] = child
                node.children[rest[0]] = upper
                child = upper
            if replica not in child.stamps:
                child.stamps[replica] = 0
                self.chars[replica] += len(child.text)
            node, rest = child, rest[shared:]
        node.stamps[replica] = self._tick()

    def match(self, text: str) -> tuple[int, int | None]:
        """Characters of `text`'s longest routed prefix, and the replica the router takes it to be on."""
        node, rest, matched = self.root, text, 0
        while rest:
            child = node.children.get(rest[0])
            if child is None:
                break
            shared = _shared(rest, child.text)
            matched += shared
            node = child
            if shared < len(child.text):
                break
            rest = rest[shared:]
        replica = node.first
        if replica is None or replica not in node.stamps:
            replica = node.first = next(iter(node.stamps), None)
        count = self._tick()
        if count % 8 == 0 and replica is not None:
            node.stamps[replica] = count
        return matched, replica

    def held(self, text: str, replica: int) -> int:
        """Characters of `text`'s longest prefix along nodes `replica` holds (no stamp moves: for explaining)."""
        node, rest, matched = self.root, text, 0
        while rest:
            child = node.children.get(rest[0])
            if child is None or replica not in child.stamps:
                break
            shared = _shared(rest, child.text)
            matched += shared
            if shared < len(child.text):
                break
            node, rest = child, rest[shared:]
        return matched

    def evict(self, max_chars: int) -> None:
        """Trim every replica holding more than `max_chars` characters by its least recently stamped leaves."""
        if all(c <= max_chars for c in self.chars):
            return
        heap: list[tuple[int, int, int, _Node]] = []  # (stamp, found, replica, node)
        found = 0
        stack = [self.root]
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            below: set[int] = set()
            for child in node.children.values():
                below.update(child.stamps)
            for replica, stamp in node.stamps.items():
                if replica not in below:
                    heap.append((stamp, found, replica, node))
                    found += 1
        heapq.heapify(heap)
        while heap:
            _, _, replica, node = heapq.heappop(heap)
            if self.chars[replica] <= max_chars:
                continue
            if replica not in node.stamps or any(replica in c.stamps for c in node.children.values()):
                continue  # no longer a leaf of this replica
            self.chars[replica] = max(0, self.chars[replica] - len(node.text))
            del node.stamps[replica]
            parent = node.parent
            if parent is None:
                continue
            if not node.children and not node.stamps and node.text:
                del parent.children[node.text[0]]
            if replica in parent.stamps and not any(replica in c.stamps for c in parent.children.values()):
                heapq.heappush(heap, (parent.stamps[replica], found, replica, parent))
                found += 1

    def check_invariants(self) -> None:
        """Each replica's count is the characters of the nodes it holds; a node's replicas hold its parent; no
        node but the root is empty, and every node is held by some replica or leads to one that is."""
        held = [0] * len(self.chars)
        stack = [self.root]
        while stack:
            node = stack.pop()
            for replica in node.stamps:
                held[replica] += len(node.text)
            for first, child in node.children.items():
                assert child.text and child.text[0] == first and child.parent is node
                assert set(child.stamps) <= set(node.stamps) or node is self.root, "a child's replica left its parent"
                assert child.stamps or child.children, "a node no replica holds"
                stack.append(child)
        assert held == self.chars, (held, self.chars)
