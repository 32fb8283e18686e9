"""One index for a fleet of radix trees: which replicas' trees hold each first key, so a look-up skips the rest.

A prompt's first key is its system prompt (or the first block of a trace's);
a tree holds some prefix of the prompt only if its root has a child for that
key, and with many replicas most trees have none for a given prompt. The index
maps each first key to a bit mask of the replicas whose root has it (bit
`1 << i` is replica `i`), kept in step by the trees (`model.radix.RadixTree`
given an index): a tree sets its bit when it hangs a new child off its root
and clears it when it evicts one; a split keeps the child's first key, so it
changes nothing here. These are rare events (a root child is a whole branch),
so keeping the index costs next to nothing. A router (`routing.view.View`)
then peeks only the trees whose bit is set for the prompt's first key and
takes 0 for the rest: the same numbers as peeking every tree.

Invariant (checked by `check`): a key's mask has bit i set exactly when
replica i's tree root has a child for that key; no key maps to an empty mask.
"""

from collections.abc import Hashable, Sequence
from typing import Any

__all__ = ["FirstKeys"]


class FirstKeys:
    """Which replicas' trees have a root child for each first key (see the module's docstring)."""

    __slots__ = ("holders",)

    def __init__(self) -> None:
        self.holders: dict[Hashable, int] = {}  # first key -> bit mask of the replicas whose tree's root has it

    def add(self, key: Hashable, bit: int) -> None:
        """Replica `bit`'s tree now has a root child for `key`."""
        holders = self.holders
        holders[key] = holders.get(key, 0) | bit

    def drop(self, key: Hashable, bit: int) -> None:
        """Replica `bit`'s tree no longer has a root child for `key`."""
        holders = self.holders
        left = holders[key] & ~bit
        if left:
            holders[key] = left
        else:
            del holders[key]

    def check(self, trees: Sequence[Any]) -> None:
        """Raise AssertionError unless every mask is exactly the trees (`model.radix.RadixTree`) whose root has the key."""
        want: dict[Hashable, int] = {}
        for i, tree in enumerate(trees):
            for key in tree.root.children:
                want[key] = want.get(key, 0) | (1 << i)
        assert want == self.holders, "the first-key index is out of step with the trees"
