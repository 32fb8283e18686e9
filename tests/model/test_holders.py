"""The fleet's first-key index: kept in step by the trees, and a router's matches through it equal every tree's peek."""

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from model.holders import FirstKeys
from model.radix import RadixTree
from model.routing.view import View


def fleet(n, capacity, heads):
    """`n` replicas as a View sees them, their trees sharing `heads`."""
    return [SimpleNamespace(index=i, tree=RadixTree(capacity, None, heads, 1 << i), cache=True, last_routed=-1)
            for i in range(n)]


def request(keys):
    return SimpleNamespace(keys=tuple(keys), sizes=tuple(10 for _ in keys))


def test_a_tree_sets_its_bit_for_a_new_root_child_and_clears_it_when_it_evicts_the_branch():
    heads = FirstKeys()
    one, two = fleet(2, 100, heads)
    one.tree.insert(("sys", "a"), (30, 20))
    two.tree.insert(("sys", "b"), (30, 20))
    two.tree.insert(("other",), (10,))
    assert heads.holders == {"sys": 0b11, "other": 0b10}
    two.tree.evict(100)
    assert heads.holders == {"sys": 0b01}
    heads.check([one.tree, two.tree])


def test_a_split_keeps_the_first_key_so_the_index_does_not_change():
    heads = FirstKeys()
    (one,) = fleet(1, 100, heads)
    one.tree.insert(("sys", "a", "b"), (30, 20, 10))
    one.tree.find(("sys", "c"))  # splits the root's child after its first key
    assert len(one.tree.nodes()) == 2 and heads.holders == {"sys": 0b1}
    heads.check([one.tree])


def test_matches_peek_only_trees_with_the_first_key_and_agree_with_every_tree():
    heads = FirstKeys()
    replicas = fleet(3, 100, heads)
    replicas[0].tree.insert(("sys", "a"), (30, 20))
    replicas[2].tree.insert(("sys", "b"), (30, 20))
    replicas[1].tree.insert(("elsewhere",), (40,))
    assert View(request(("sys", "a", "q")), replicas, 0.0, None, heads).matches() == [50, 0, 30]
    assert View(request(("elsewhere",)), replicas, 0.0, None, heads).matches() == [0, 40, 0]
    assert View(request(()), replicas, 0.0, None, heads).matches() == [0, 0, 0]


KEYS = st.sampled_from("abcde")
SEQS = st.lists(KEYS, min_size=1, max_size=5)
OPS = st.lists(st.tuples(st.sampled_from(["insert", "find", "evict", "ask"]), st.integers(0, 3), SEQS,
                         st.integers(1, 120)), max_size=50)


@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(0, 200), ops=OPS)
def test_after_random_inserts_splits_and_evictions_the_index_answers_as_walking_every_tree(capacity, ops):
    heads = FirstKeys()
    replicas = fleet(4, capacity, heads)
    trees = [r.tree for r in replicas]
    for op, i, keys, amount in ops:
        keys = tuple(keys)
        sizes = tuple(5 + (ord(k) % 5) * 7 for k in keys)
        if op == "insert":
            trees[i].insert(keys, sizes)
        elif op == "find":
            trees[i].find(keys)
        elif op == "evict":
            trees[i].evict(amount)
        else:  # a router's look-up, with one replica's match already known (as lab mode's engine learns it)
            view = View(request(keys), replicas, 0.0, None, heads)
            if amount % 2:
                view.learn(i, trees[i].peek(keys))
            assert view.matches() == [t.peek(keys) for t in trees]
        heads.check(trees)
        for t in trees:
            t.check_invariants()
