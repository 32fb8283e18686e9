"""The model's shortcuts change only the work: a prompt cached from the node its request holds locked leaves
the tree as caching it from the root does, splits and evictions in between included."""

import random

from helpers import tree_nodes
from hypothesis import given, settings
from hypothesis import strategies as st

from model.radix import RadixTree


def shape(tree: RadixTree) -> tuple:
    """Everything a later operation can see of `tree`: each node by its path, with its tokens, stamp and locks."""
    return (tree_nodes(tree), tree.total_tokens, tree.locked_tokens, tree.evicted_tokens, tree.clock.now)


def prompt(rng: random.Random) -> tuple[tuple, tuple]:
    """A prompt sharing a head and part of a conversation with others (so edges split), and its sizes."""
    keys = (("head", rng.randrange(3)),) + tuple(("turn", rng.randrange(3), k) for k in range(rng.randrange(5)))
    keys += (("new", rng.random()),)
    return keys, tuple(rng.randrange(1, 40) for _ in keys)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(60, 400))
def test_caching_from_the_locked_node_leaves_the_tree_as_caching_from_the_root(seed, capacity):
    rng = random.Random(seed)
    root_way, lock_way = RadixTree(capacity), RadixTree(capacity)
    flight: list[tuple] = []  # requests found and locked, not yet cached: (keys, sizes, lock in each tree, at)
    for _ in range(120):
        if flight and (rng.random() < 0.5 or len(flight) > 6):
            keys, sizes, a, b, at = flight.pop(rng.randrange(len(flight)))
            root_way.insert(keys, sizes)
            lock_way.insert(keys, sizes, b, at)
            root_way.unlock(a)
            lock_way.unlock(b)
        else:
            keys, sizes = prompt(rng)
            a, at_a, got_a = root_way.find(keys)
            b, at, got = lock_way.find(keys)
            assert (at_a, got_a) == (at, got)
            root_way.lock(a)
            lock_way.lock(b)
            flight.append((keys, sizes, a, b, at))
        root_way.check_invariants()
        lock_way.check_invariants()
        assert shape(lock_way) == shape(root_way)
