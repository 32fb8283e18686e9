"""Exact behaviour of the radix tree on tiny hand-built sequences, then invariants under random use."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.radix import RadixTree


def seq(*items):
    """('a', 10), ('b', 20) ... -> (keys, sizes)."""
    return tuple(k for k, _ in items), tuple(n for _, n in items)


A, B, C, D = ("a", 100), ("b", 20), ("c", 30), ("d", 40)


def match(tree, keys):
    """The splitting walk's node and tokens for `keys` (touches the path)."""
    node, _, tokens = tree.find(keys)
    return node, tokens


def test_insert_then_match_counts_tokens_of_the_longest_prefix():
    tree = RadixTree(1000)
    node, added = tree.insert(*seq(A, B, C))
    assert added == 150 and tree.total_tokens == 150
    assert tree.peek(seq(A, B, C)[0]) == 150
    assert tree.peek(seq(A, B, D)[0]) == 120
    assert tree.peek(seq(B)[0]) == 0
    assert tree.peek(()) == 0
    tree.check_invariants()


def test_partial_match_splits_the_edge_and_insert_shares_the_trunk():
    tree = RadixTree(1000)
    tree.insert(*seq(A, B, C))
    assert len(tree.nodes()) == 1
    node, matched = match(tree, seq(A, B, D)[0])
    assert matched == 120
    assert node.keys == ("a", "b") and node.tokens == 120
    assert [n.keys for n in node.children.values()] == [("c",)]
    _, added = tree.insert(*seq(A, B, D))
    assert added == 40 and tree.total_tokens == 190
    assert sorted(n.keys for n in node.children.values()) == [("c",), ("d",)]
    tree.check_invariants()


def test_peek_changes_nothing():
    tree = RadixTree(1000)
    tree.insert(*seq(A, B, C))
    stamps = [(n.keys, n.stamp) for n in tree.nodes()]
    assert tree.peek(seq(A, D)[0]) == 100
    assert [(n.keys, n.stamp) for n in tree.nodes()] == stamps  # no split, no touch


def test_inserting_a_cached_sequence_adds_nothing():
    tree = RadixTree(1000)
    tree.insert(*seq(A, B))
    node, added = tree.insert(*seq(A, B))
    assert added == 0 and node.keys == ("a", "b") and tree.total_tokens == 120


def test_eviction_takes_the_least_recently_used_leaf_and_keeps_the_trunk():
    tree = RadixTree(1000)
    for leaf in (B, C, D):
        tree.insert(*seq(A, leaf))
    match(tree, seq(A, B)[0])  # b is now the most recent; c is the oldest leaf
    assert tree.evict(1) == 30
    assert tree.peek(("a", "c")) == 100 and tree.peek(("a", "d")) == 140
    assert tree.evict(1) == 40  # then d
    assert tree.evict(1) == 20  # then b
    assert tree.total_tokens == 100  # the trunk went last: it became a leaf only now
    assert tree.evict(1) == 100
    assert tree.total_tokens == 0 and tree.nodes() == []
    assert tree.evicted_tokens == 30 + 40 + 20 + 100  # the running total the series' evictions are read from
    tree.check_invariants()


def test_a_parent_is_evictable_only_after_its_last_child():
    tree = RadixTree(1000)
    tree.insert(*seq(A, B))
    tree.insert(*seq(A, C))
    match(tree, ("a",))  # touch only the trunk: it is newer than both leaves, but not a leaf
    assert tree.evict(50) == 50  # both leaves (20 + 30), not the 100-token trunk
    assert tree.peek(("a",)) == 100


def test_locked_nodes_and_their_ancestors_are_never_evicted():
    tree = RadixTree(1000)
    tree.insert(*seq(A, B))
    node, _ = tree.insert(*seq(A, C))
    tree.lock(node)
    assert tree.locked_tokens == 130 and tree.evictable_tokens == 20
    assert tree.evict(10_000) == 20
    assert tree.peek(("a", "c")) == 130
    tree.check_invariants()
    tree.unlock(node)
    assert tree.locked_tokens == 0
    assert tree.evict(10_000) == 130
    tree.check_invariants()


def test_locks_count_so_two_holders_need_two_unlocks():
    tree = RadixTree(1000)
    node, _ = tree.insert(*seq(A))
    tree.lock(node)
    tree.lock(node)
    tree.unlock(node)
    assert tree.evict(1000) == 0
    tree.unlock(node)
    assert tree.evict(1000) == 100
    with pytest.raises(RuntimeError):
        tree.unlock(node)


def test_split_of_a_locked_edge_keeps_both_halves_locked():
    tree = RadixTree(1000)
    node, _ = tree.insert(*seq(A, B, C))
    tree.lock(node)
    match(tree, ("a", "d"))  # splits a|b,c
    tree.check_invariants()
    assert tree.locked_tokens == 150 and tree.evict(1000) == 0


def test_capacity_is_never_exceeded_and_a_prefix_that_fits_is_kept():
    tree = RadixTree(125)
    _, added = tree.insert(*seq(A, B, C))
    assert added == 120 and tree.total_tokens == 120  # c (30) does not fit after a and b
    assert tree.peek(("a", "b", "c")) == 120
    tree.check_invariants()


def test_insert_evicts_old_leaves_to_make_room():
    tree = RadixTree(200)
    tree.insert(*seq(A, B))
    tree.insert(*seq(A, C))  # 150 in all
    match(tree, ("a", "b"))  # c is the oldest leaf
    _, added = tree.insert(*seq(A, D, ("e", 10)))  # needs 50, has 50 free: no eviction
    assert added == 50 and tree.total_tokens == 200
    _, added = tree.insert(*seq(("z", 25),))  # needs 25: evicts c (30), the oldest leaf
    assert added == 25
    assert tree.peek(("a", "c")) == 100 and tree.peek(("a", "b")) == 120
    assert tree.total_tokens == 195
    tree.check_invariants()


def test_insert_never_evicts_its_own_attach_point():
    tree = RadixTree(130)
    tree.insert(*seq(A, B))  # 120, one unlocked leaf path
    _, added = tree.insert(*seq(A, B, C))  # needs 30 with 10 free; a,b are the only candidates
    assert added == 0  # it may not evict the prefix it hangs from
    assert tree.peek(("a", "b")) == 120
    tree.check_invariants()


def test_zero_capacity_holds_nothing():
    tree = RadixTree(0)
    _, added = tree.insert(*seq(A))
    assert added == 0 and tree.total_tokens == 0 and tree.peek(("a",)) == 0


# -- invariants under random use -------------------------------------------

KEYS = st.sampled_from("abcdef")
SEQS = st.lists(KEYS, min_size=1, max_size=6)
OPS = st.lists(st.tuples(st.sampled_from(["insert", "match_lock", "unlock", "evict"]), SEQS,
                         st.integers(1, 200)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(capacity=st.integers(0, 400), ops=OPS)
def test_random_use_keeps_capacity_locks_and_totals(capacity, ops):
    tree = RadixTree(capacity)
    held = []  # locked nodes, with the tokens of their path when locked
    for op, keys, amount in ops:
        sizes = tuple(10 + (ord(k) % 7) * 5 for k in keys)  # a key always has the same size
        if op == "insert":
            tree.insert(tuple(keys), sizes)
        elif op == "match_lock":
            shape = [(n.keys, n.stamp) for n in tree.nodes()]
            peeked = tree.peek(tuple(keys))
            assert [(n.keys, n.stamp) for n in tree.nodes()] == shape, "peek changed the tree"
            node, matched = match(tree, tuple(keys))
            assert matched == peeked, "the read-only and the splitting look-up disagree"
            if node is not tree.root:
                tree.lock(node)
                held.append((node, tuple(keys), matched))
        elif op == "unlock" and held:
            node, _, _ = held.pop(amount % len(held))
            tree.unlock(node)
        else:
            tree.evict(amount)
        tree.check_invariants()
        assert tree.total_tokens <= capacity
        for node, keys_held, matched in held:
            assert node.alive, "a locked node was evicted"
            assert tree.peek(keys_held) >= matched, "a locked prefix shrank"


def shape(tree):
    """Every node, parents first and children by key: its keys, sizes, stamp and lock count; and the totals."""
    out, stack = [], [tree.root]
    while stack:
        node = stack.pop()
        out.append((node.keys, node.sizes, node.stamp, node.lock_ref))
        stack.extend(node.children[k] for k in sorted(node.children, reverse=True))
    return out, tree.total_tokens, tree.locked_tokens, tree.evicted_tokens, tree.clock.now


REQUESTS = st.lists(st.tuples(st.sampled_from(["queue", "finish", "insert", "evict"]), SEQS, SEQS,
                              st.integers(1, 200)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(capacity=st.integers(0, 400), ops=REQUESTS)
def test_the_one_walk_look_ups_leave_the_tree_the_two_calls_leave(capacity, ops):
    """`find_locked` is `find` then `lock`, and `insert_unlocking` is `insert` then `unlock`: the same nodes,
    stamps, locks and totals after every step, so the same evictions after."""
    fused, plain = RadixTree(capacity), RadixTree(capacity)
    held = []  # (fused's lock, plain's lock, keys matched, the request's keys and sizes), queued requests
    for op, keys, more, amount in ops:
        keys = tuple(keys)
        sizes = tuple(10 + (ord(k) % 7) * 5 for k in keys)
        if op == "queue":
            a, at, matched = fused.find_locked(keys)
            b, at_b, matched_b = plain.find(keys)
            plain.lock(b)
            assert (at, matched) == (at_b, matched_b)
            grown = keys + tuple(more)  # the prompt and its answer, cached when it finishes
            held.append((a, b, at, grown, tuple(10 + (ord(k) % 7) * 5 for k in grown)))
        elif op == "finish" and held:
            a, b, at, grown, grown_sizes = held.pop(amount % len(held))
            fused.insert_unlocking(grown, grown_sizes, a, at)
            plain.insert(grown, grown_sizes, b, at)
            plain.unlock(b)
        elif op == "insert":
            fused.insert(keys, sizes)
            plain.insert(keys, sizes)
        else:
            assert fused.evict(amount) == plain.evict(amount)
        fused.check_invariants()
        assert shape(fused) == shape(plain)
