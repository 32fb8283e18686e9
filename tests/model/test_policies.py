"""The production routers and the router's approximate view, each pinned on a tiny hand-built fleet."""

import math

from helpers import busy, fleet, request
from hypothesis import given, settings
from hypothesis import strategies as st

from model import Scenario, simulate
from model.engines.lab import Run
from model.memory import Memory
from model.rng import stream
from model.routing.policies.bounded_hash import BoundedHash
from model.routing.policies.consistent_hash import ConsistentHash
from model.routing.policies.cost import Cost
from model.routing.policies.power_of_two import PowerOfTwo
from model.routing.policies.prefix_load_aware import PrefixLoadAware
from model.routing.view import View


def scenario(**text):
    return Scenario().with_text({k.replace("__", "."): str(v) for k, v in text.items()})


def pick(router, req, reps, now=0.0, memory=None):
    return router.choose(View(req, reps, now, memory))


def load(replica, n):
    """Put `n` requests in flight on `replica` (one running, the rest queued)."""
    for k in range(n):
        replica.enqueue(request(10_000 + k, ["load", k]))
    if n:
        replica.start_next(0.0)


def warm(replica, keys, size=100):
    replica.tree.insert(tuple(keys), (size,) * len(keys))


# -- power of two ---------------------------------------------------------------

def test_power_of_two_takes_the_less_loaded_of_two_seeded_draws():
    reps = fleet(5)
    for i, seconds in enumerate([0.5, 0.1, 0.4, 0.2, 0.3]):
        busy(reps[i], seconds)
    router = PowerOfTwo(scenario(seed=3, fleet__replicas=5))
    rng = stream(3, "router")
    for n in range(50):
        a, b = rng.randrange(5), rng.randrange(4)
        b += b >= a
        assert a != b
        expected = a if reps[a].backlog(0.0) < reps[b].backlog(0.0) else b
        assert pick(router, request(n, ["s"]), reps) == expected


# -- bounded-load hashing ----------------------------------------------------------

def test_bounded_hash_follows_the_ring_until_the_owner_is_full():
    reps = fleet(4)
    plain, bounded = ConsistentHash(scenario(fleet__replicas=4)), BoundedHash(scenario(fleet__replicas=4))
    req = request(0, ["s"], system_prompt=7)
    owner = pick(plain, req, reps)
    assert pick(bounded, req, reps) == owner
    load(reps[owner], 3)  # bound = ceil(1.25 * 4 / 4) = 2: the owner is full
    assert pick(bounded, req, reps) != owner


@settings(max_examples=200, deadline=None)
@given(loads=st.lists(st.integers(0, 12), min_size=1, max_size=8), prompt=st.integers(0, 50),
       factor=st.sampled_from(["1", "1.25", "2"]))
def test_bounded_hash_never_places_a_request_past_the_bound(loads, prompt, factor):
    reps = fleet(len(loads))
    for r, n in zip(reps, loads):
        load(r, n)
    router = BoundedHash(scenario(fleet__replicas=len(loads), router__load_factor=factor))
    bound = math.ceil(float(factor) * (sum(loads) + 1) / len(loads))
    choice = pick(router, request(0, ["s"], system_prompt=prompt), reps)
    assert loads[choice] + 1 <= bound


def test_bounded_hash_keeps_every_placement_under_its_bound_in_a_whole_run():
    placed = []

    class Watched(BoundedHash):
        def choose(self, view):
            index = super().choose(view)
            placed.append((view.in_flight(index) + 1, self.bound(view)))
            return index

    s = scenario(router__kind="bounded_hash", fleet__replicas=4, traffic__session_rate=6, duration_s=60)
    run = Run(s)
    run.dispatch.policy = Watched(s)
    result = run.finish()
    assert len(placed) == result.requests
    assert all(after <= bound for after, bound in placed)
    assert any(after == bound for after, bound in placed)  # the bound was reached, so it was tested


# -- prefix-aware with a load fallback ------------------------------------------------

def test_prefix_load_aware_follows_the_prefix_until_twice_the_median():
    reps = fleet(4)
    warm(reps[2], ["s", "u"])
    for r in (reps[0], reps[1], reps[3]):
        load(r, 1)
    router = PrefixLoadAware(scenario(router__kind="prefix_load_aware"))
    req = request(0, ["s", "u", "x"])
    load(reps[2], 2)  # median in flight 1: 2 is not more than 2 x 1
    assert pick(router, req, reps) == 2
    reps[2].enqueue(request(99, ["y"]))  # 3 in flight > 2: reroute to the least loaded
    assert pick(router, req, reps) != 2


def test_prefix_load_aware_on_an_idle_fleet_is_not_least_loaded():
    reps = fleet(3)
    warm(reps[1], ["s"])
    load(reps[1], 2)  # median 0, floored to 1: 2 in flight stays within 2 x 1
    assert pick(PrefixLoadAware(scenario()), request(0, ["s", "u"]), reps) == 1


# -- lowest estimated TTFT --------------------------------------------------------------

def test_cost_weighs_the_queue_against_the_prefill_it_saves():
    reps = fleet(2)  # 10,000 tokens/s, 15 ms overhead
    warm(reps[0], ["s"], size=5_000)
    req = request(0, ["s", "u"], sizes=[5_000, 100])
    busy(reps[0], 0.4)  # warm: 0.4 + 0.015 + 0.01; cold: 0.015 + 0.51
    assert pick(Cost(scenario()), req, reps) == 0
    busy(reps[0], 0.6)  # warm: 0.625 > cold 0.525
    assert pick(Cost(scenario()), req, reps) == 1


# -- the approximate view -------------------------------------------------------------------

def test_memory_remembers_what_was_sent_and_forgets_after_the_ttl():
    memory = Memory(2, ttl_s=10.0)
    memory.sent(0, ("s", "u"), (100, 50), now=0.0)
    assert memory.matched(0, ("s", "u", "x"), now=5.0) == 150 and memory.matched(1, ("s",), now=5.0) == 0
    memory.sent(0, ("s",), (100,), now=8.0)  # refreshes the trunk only
    assert memory.matched(0, ("s", "u"), now=10.0) == 150
    assert memory.matched(0, ("s", "u"), now=10.5) == 100  # "u" last sent at 0: forgotten after 10 s
    assert memory.tokens(0, now=10.5) == 100
    assert memory.matched(0, ("s",), now=18.5) == 0 and memory.tokens(0, now=18.5) == 0


def test_after_an_eviction_the_router_believes_more_than_the_tree_holds():
    reps = fleet(1, capacity=300)
    memory = Memory(1, ttl_s=None)
    first = request(0, ["a", "b"])
    memory.sent(0, first.keys, first.sizes, 0.0)
    warm(reps[0], ["a", "b"])
    warm(reps[0], ["c", "d", "e"])  # 500 tokens more than fit: a and b are evicted
    view = View(request(1, ["a", "b", "x"]), reps, 1.0, memory)
    assert view.matched(0) == 200 and view.actual(0) == 0


def test_the_approximate_view_overestimates_when_caches_are_small_and_never_with_the_exact_view():
    small = dict(router__kind="cache_aware", fleet__memory_gb=0.25, fleet__replicas=4)
    assert simulate(scenario(**small)).router_overestimate == 0.0
    assert simulate(scenario(**small, router__view="approximate")).router_overestimate > 0.2


def test_with_unlimited_cache_and_no_ttl_the_router_never_believes_more_than_finished_requests_left():
    s = scenario(router__kind="cache_aware", router__view="approximate", router__view_ttl_s="off",
                 fleet__memory_gb=1024, duration_s=60)
    run = Run(s)
    result = run.finish()
    assert run.dispatch.memory is not None
    for req, rec in zip(run.requests, result.records):
        for i, replica in enumerate(run.replicas):  # any prompt, any replica: belief <= what the tree holds
            assert run.dispatch.memory.matched(i, req.keys, run.loop.now) <= replica.tree.peek(req.keys)
        assert run.dispatch.memory.matched(rec.replica, req.keys, run.loop.now) == req.prompt_tokens
    # The trees hold more than the router knows: answers never pass through it.
    held = sum(r.tree.total_tokens for r in run.replicas)
    believed = sum(run.dispatch.memory.tokens(i, run.loop.now) for i in range(len(run.replicas)))
    assert held > believed
