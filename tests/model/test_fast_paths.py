"""The core's fast paths give the answers of the plain rules they replace, on random inputs.

The plain rules are written here, not in the model: a tree that files every walked leaf and then locks it,
routers that sort the whole fleet by a key function, a loop stepped one event at a time, and who else holds a
prompt found by walking every other tree.
"""

import random
from unittest.mock import patch

from helpers import fleet, request, tree_nodes
from hypothesis import given, settings
from hypothesis import strategies as st

from model import Scenario, simulate
from model.engines import lab
from model.loop import ARRIVE, EventLoop
from model.radix import Clock, RadixTree
from model.routing.dispatch import held_elsewhere
from model.routing.policies.cache_aware import CacheAware
from model.routing.view import View


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.integers(30, 300))
def test_find_locked_caches_and_evicts_as_find_then_lock(seed, capacity):
    rng = random.Random(seed)
    plain, fast = RadixTree(capacity), RadixTree(capacity)
    locks: list[tuple[object, object]] = []
    for _ in range(200):
        if locks and rng.random() < 0.35:
            a, b = locks.pop(rng.randrange(len(locks)))
            plain.unlock(a)
            fast.unlock(b)
            continue
        keys = (("head", rng.randrange(3)),) + tuple(("turn", rng.randrange(4), k) for k in range(rng.randrange(5)))
        sizes = tuple(rng.randrange(1, 30) for _ in keys)
        if rng.random() < 0.5:
            a, at_a, got_a = plain.find(keys)
            plain.lock(a)
            b, at_b, got_b = fast.find_locked(keys)
            assert (at_a, got_a) == (at_b, got_b)
            locks.append((a, b))
        else:
            assert plain.insert(keys, sizes)[1] == fast.insert(keys, sizes)[1]
        fast.check_invariants()
        assert tree_nodes(plain) == tree_nodes(fast)
        assert (plain.total_tokens, plain.locked_tokens, plain.evicted_tokens) == (
            fast.total_tokens, fast.locked_tokens, fast.evicted_tokens)


def least_loaded_rule(view: View) -> int:
    """Least backlog, then least recently routed, then lowest index."""
    reps = view.replicas
    return min(range(len(reps)), key=lambda i: (reps[i].backlog(view.now), reps[i].last_routed, i))


def longest_match_rule(view: View) -> int:
    """Longest match in the tree, then as `least_loaded_rule`."""
    reps = view.replicas
    return min(range(len(reps)), key=lambda i: (-reps[i].tree.peek(view.request.keys), reps[i].backlog(view.now),
                                                reps[i].last_routed, i))


def random_fleet(rng: random.Random, n: int, loads: list[float]):
    """`n` replicas with loads drawn from `loads` (or any), a little queued work, routed a few times, a few
    prompts in their trees; a prompt to route and the time to route it at."""
    reps = fleet(n)
    for r in reps:
        r.busy_until = rng.choice([*loads, rng.random()])
        r.queued_work_s = rng.choice([0.0, 0.0, 0.25])
        r.last_routed = rng.randrange(-1, 4)
        for _ in range(rng.randrange(3)):
            r.tree.insert(*request(0, ["s"] + [f"t{k}" for k in range(rng.randrange(4))])[5:7])
    prompt = request(9, ["s"] + [f"t{k}" for k in range(rng.randrange(5))])
    return reps, prompt, rng.choice([0.0, 0.3])


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 16))
def test_least_loaded_and_longest_match_follow_their_rules(seed, n):
    reps, prompt, now = random_fleet(random.Random(seed), n, [0.0, 0.0, 0.5, 1.0])  # ties at 0 (idle), equal loads
    assert View(prompt, reps, now).least_loaded() == least_loaded_rule(View(prompt, reps, now))
    assert View(prompt, reps, now).longest_match() == longest_match_rule(View(prompt, reps, now))


def cache_aware_rule(view: View, threshold: float | None) -> int:
    """The longest match; the least loaded instead if the longest's backlog exceeds the least loaded's by more
    than the threshold (both found by the rules above)."""
    best = longest_match_rule(view)
    if threshold is None:
        return best
    least = least_loaded_rule(view)
    reps = view.replicas
    if reps[best].backlog(view.now) - reps[least].backlog(view.now) > threshold:
        return least
    return best


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 16), st.sampled_from([None, 0.0, 0.3, 1.0]))
def test_cache_aware_spills_by_its_rule(seed, n, threshold):
    reps, prompt, now = random_fleet(random.Random(seed), n, [0.0, 0.0, 0.5, 1.0, 1.3])  # gaps either side of a threshold
    policy = CacheAware(Scenario().with_text({"router.spill_threshold_s": "off" if threshold is None else str(threshold)}))
    assert policy.threshold == threshold
    assert policy.choose(View(prompt, reps, now)) == cache_aware_rule(View(prompt, reps, now), threshold)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 3)), max_size=40), st.integers(0, 25))
def test_run_noting_notes_the_counter_after_each_event_as_stepping_does(events, until):
    def loop_of(clock: Clock) -> EventLoop:
        loop = EventLoop()

        def act(bumps: int) -> None:
            clock.now += bumps
            if bumps == 3 and loop.now < 30:
                loop.at(loop.now + 1, ARRIVE, act, 1)  # an action that schedules another

        for time, bumps in events:
            loop.at(float(time), ARRIVE, act, bumps)
        return loop

    plain_clock, fast_clock = Clock(), Clock()
    plain, fast = loop_of(plain_clock), loop_of(fast_clock)
    values, times = [], []
    while (time := plain.peek()) is not None and time <= until:
        plain.step()
        values.append(plain_clock.now)
        times.append(time)
    got_values: list[int] = []
    got_times: list[float] = []
    fast.run_noting(until, fast_clock, got_values, got_times)
    assert (got_values, got_times, fast.now, len(fast)) == (values, times, plain.now, len(plain))


def held_elsewhere_rule(view: View, index: int, actual: int | None = None) -> int:
    """The most tokens another replica's tree holds, by walking every other tree, capped at the cacheable tokens."""
    request, replicas = view.request, view.replicas
    if not replicas[index].cache:
        return 0
    mine = replicas[index].tree.peek(request.keys) if actual is None else actual
    if mine >= request.cacheable_tokens:
        return 0
    others = [r.tree.peek(request.keys) for r in replicas if r.index != index]
    return min(max(others, default=0), request.cacheable_tokens)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 8), st.sampled_from(["least_loaded", "cache_aware", "round_robin"]),
       st.sampled_from(["0.05", "0.3", "4"]), st.sampled_from(["none", "top", "bottom"]))
def test_held_elsewhere_is_the_capped_most_of_every_other_tree_at_every_decision(seed, n, kind, memory, dynamic):
    scenario = Scenario().with_text({"seed": str(seed), "fleet.replicas": str(n), "router.kind": kind,
                                     "fleet.memory_gb": memory, "dynamic_text": dynamic, "duration_s": "40"})
    decisions, hints = [], []

    def checked(view: View, index: int, actual: int | None = None, likeliest: int = -1) -> int:
        want = held_elsewhere_rule(view, index, actual)  # before the fast path looks anything up in the view
        got = held_elsewhere(view, index, actual, likeliest)
        other = held_elsewhere(view, index, actual, (index + 1 + seed) % len(view))  # any replica looked at first
        decisions.append((got, want, other))
        hints.append(likeliest)
        return got

    with patch.object(lab, "held_elsewhere", checked):
        simulate(scenario)
    assert decisions and all(got == want == other for got, want, other in decisions)
    assert any(likeliest >= 0 for likeliest in hints)  # lab mode names where a conversation went last
