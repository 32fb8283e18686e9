"""Trees sharing one clock (as `model.studies.tree` makes them while it watches a run) cache and evict exactly as trees
with a clock each: the other trees' touches only leave gaps between one tree's stamps."""

import random

import pytest
from helpers import tree_nodes
from hypothesis import given, settings
from hypothesis import strategies as st

from model import Scenario
from model.engines.lab import Run
from model.radix import Clock, RadixTree
from model.studies.tree import _stepped


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(40, 300))
def test_a_shared_clock_evicts_the_same_leaves_in_the_same_order(seed, capacity):
    rng = random.Random(seed)
    shared = Clock()
    own = [RadixTree(capacity) for _ in range(3)]
    joint = [RadixTree(capacity, shared) for _ in range(3)]
    locks: list[tuple[int, object, object]] = []
    for _ in range(150):
        i = rng.randrange(3)
        if locks and rng.random() < 0.3:
            j, a, b = locks.pop(rng.randrange(len(locks)))
            own[j].unlock(a)
            joint[j].unlock(b)
            continue
        keys = (("head", rng.randrange(3)),) + tuple(("turn", rng.randrange(4), k) for k in range(rng.randrange(5)))
        sizes = tuple(rng.randrange(1, 30) for _ in keys)
        if rng.random() < 0.4:
            a, _, got_a = own[i].find(keys)
            b, _, got_b = joint[i].find(keys)
            assert got_a == got_b
            own[i].lock(a)
            joint[i].lock(b)
            locks.append((i, a, b))
        else:
            assert own[i].insert(keys, sizes)[1] == joint[i].insert(keys, sizes)[1]
        for a, b in zip(own, joint):
            b.check_invariants()
            assert tree_nodes(a, stamps=False) == tree_nodes(b, stamps=False)  # stamps differ between the two ways
            assert (a.total_tokens, a.locked_tokens, a.evicted_tokens) == (b.total_tokens, b.locked_tokens,
                                                                            b.evicted_tokens)
    assert shared.now == sum(t.clock.now for t in own)  # every touch of every tree, counted once


def test_watching_a_run_refuses_trees_already_touched():
    scenario = Scenario().with_text({"duration_s": "20"})
    run = Run(scenario)
    run.replicas[0].tree.insert(("x",), (5,))
    with pytest.raises(RuntimeError, match="nothing has touched"):
        _stepped(run, scenario, None, None)
