"""A router's own memory of what it sent where: the `approximate` router view.

Real routers do not read each replica's tree. SGLang's router, NVIDIA Dynamo's
approximate KV mode and similar keep their own index instead: for every
replica, a prefix tree of the prompts the router itself sent there, updated
on its own decisions only. It is never told of an eviction, never sees an
answer (only prompts pass through it), and forgets an entry `ttl_s` seconds
after it last sent that prefix (Dynamo's approximate mode uses 120 s).

Structure: per replica a trie of `_Entry` nodes keyed by prompt segment. A
send stamps every node on its path with the time, so a parent is always at
least as fresh as its children, and an expired node's whole subtree has
expired with it. Expiry is lazy but exact: sends are queued in time order
and, before any look-up at time `now`, nodes last stamped before
`now - ttl_s` are dropped with their subtrees, keeping a running total of
remembered tokens per replica.
"""

from collections import deque
from collections.abc import Hashable, Sequence

__all__ = ["Memory"]


class _Entry:
    """One remembered segment: its size, when it was last sent, and what followed it."""

    __slots__ = ("children", "tokens", "stamp", "alive", "parent", "key")

    def __init__(self, parent: "_Entry | None", key: Hashable, tokens: int, stamp: float) -> None:
        self.parent = parent
        self.key = key
        self.children: dict[Hashable, _Entry] = {}
        self.tokens = tokens
        self.stamp = stamp
        self.alive = True


class Memory:
    """What a router believes each of `replicas` holds; `ttl_s` None never forgets."""

    __slots__ = ("roots", "ttl_s", "totals", "_sent")

    def __init__(self, replicas: int, ttl_s: float | None) -> None:
        self.roots = [_Entry(None, None, 0, 0.0) for _ in range(replicas)]
        self.ttl_s = ttl_s
        self.totals = [0] * replicas  # remembered tokens per replica
        self._sent: deque[tuple[float, int, _Entry]] = deque()  # (stamp, replica, entry) in time order

    def matched(self, replica: int, keys: Sequence[Hashable], now: float) -> int:
        """Tokens of the longest prefix of `keys` the router believes `replica` holds at `now`."""
        self._forget(now)
        node, matched = self.roots[replica], 0
        for key in keys:
            child = node.children.get(key)
            if child is None:
                break
            matched += child.tokens
            node = child
        return matched

    def tokens(self, replica: int, now: float) -> int:
        """Every token the router remembers sending to `replica` (the size of its believed tree)."""
        self._forget(now)
        return self.totals[replica]

    def sent(self, replica: int, keys: Sequence[Hashable], sizes: Sequence[int], now: float) -> None:
        """Remember that a prompt of `keys` went to `replica` at `now`."""
        self._forget(now)
        node = self.roots[replica]
        for key, size in zip(keys, sizes):
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = _Entry(node, key, size, now)
                self.totals[replica] += size
            child.stamp = now
            if self.ttl_s is not None:
                self._sent.append((now, replica, child))
            node = child

    def _forget(self, now: float) -> None:
        if self.ttl_s is None:
            return
        sent, horizon = self._sent, now - self.ttl_s
        while sent and sent[0][0] < horizon:
            stamp, replica, entry = sent.popleft()
            if entry.alive and entry.stamp == stamp:  # not sent again since: it, and all below it, expired
                del entry.parent.children[entry.key]  # type: ignore[union-attr]
                self.totals[replica] -= self._drop(entry)

    @staticmethod
    def _drop(entry: _Entry) -> int:
        """Mark `entry` and its subtree forgotten; return their tokens."""
        dropped, stack = 0, [entry]
        while stack:
            e = stack.pop()
            e.alive = False
            dropped += e.tokens
            stack.extend(e.children.values())
        return dropped
