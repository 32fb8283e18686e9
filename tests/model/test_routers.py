"""Each router's choice on a tiny fleet, stated exactly."""

from collections import Counter

import pytest
from helpers import busy, fleet, request

from model import ROUTERS, Scenario, ScenarioError, describe, spec_of
from model.config import Routing
from model.rng import stream
from model.routing.policies.cache_aware import CacheAware
from model.routing.policies.consistent_hash import ConsistentHash
from model.routing.policies.least_loaded import LeastLoaded
from model.routing.policies.random import RandomChoice
from model.routing.policies.round_robin import RoundRobin
from model.routing.view import View


def scenario(**text):
    return Scenario().with_text({k.replace("__", "."): str(v) for k, v in text.items()})


def pick(router, req, reps, now=0.0):
    """What `router` chooses for `req` on the fleet `reps` at `now`."""
    return router.choose(View(req, reps, now))


def test_every_router_kind_has_a_class():
    assert set(ROUTERS) == {"round_robin", "random", "least_loaded", "consistent_hash", "cache_aware", "power_of_two",
                            "bounded_hash", "prefix_load_aware", "sglang", "vllm_router", "cost"}


def test_the_registry_is_the_one_list_of_routers():
    for key, cls in ROUTERS.items():
        assert cls.key == key and cls.label and cls.rule and cls.__doc__
    assert spec_of("router.kind").choices == tuple(ROUTERS)
    row = next(r for r in describe() if r["key"] == "router.kind")
    assert row["allowed"] == " | ".join(ROUTERS)
    with pytest.raises(ScenarioError, match="router.kind"):
        Routing(kind="psychic")


def test_a_view_matches_the_tree_as_it_is_when_the_view_is_made():
    reps = fleet(1)
    first = request(0, ["s", "u"])
    assert View(first, reps, 0.0).matched(0) == 0
    _warm(reps[0], ["s", "u"])
    assert View(first, reps, 0.0).matched(0) == 200  # after an insert: the new tree, not a remembered miss
    same_id = request(0, ["s", "x"])  # another request with the same id
    assert View(same_id, reps, 0.0).matched(0) == 100


def test_round_robin_cycles_whatever_the_load():
    reps = fleet(3)
    busy(reps[0], 50.0)
    router = RoundRobin(scenario())
    assert [pick(router, request(i, ["s"]), reps, 0.0) for i in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_random_draws_from_the_seeded_router_stream():
    reps = fleet(3)
    router = RandomChoice(scenario(seed=7))
    picks = [pick(router, request(i, ["s"]), reps, 0.0) for i in range(300)]
    expected = stream(7, "router")
    assert picks == [expected.randrange(3) for _ in range(300)]
    assert set(Counter(picks)) == {0, 1, 2}


def test_least_loaded_takes_the_smallest_backlog():
    reps = fleet(3)
    busy(reps[0], 0.5)
    busy(reps[1], 0.2)
    busy(reps[2], 0.3)
    assert pick(LeastLoaded(scenario()), request(0, ["s"]), reps, 0.0) == 1


def test_least_loaded_counts_queued_work_not_just_the_running_request():
    reps = fleet(2)
    busy(reps[0], 0.1)
    reps[0].enqueue(request(0, ["x"] * 10))  # ~0.115 s more queued behind
    busy(reps[1], 0.2)
    assert pick(LeastLoaded(scenario()), request(1, ["s"]), reps, 0.0) == 1


def test_ties_go_to_the_replica_routed_to_least_recently():
    reps = fleet(3)
    router = LeastLoaded(scenario())
    reps[0].last_routed, reps[1].last_routed, reps[2].last_routed = 5, 3, 4
    assert pick(router, request(9, ["s"]), reps, 0.0) == 1
    reps[1].last_routed = 9
    assert pick(router, request(10, ["s"]), reps, 0.0) == 2


def test_consistent_hash_pins_a_system_prompt_to_one_replica():
    reps = fleet(4)
    router = ConsistentHash(scenario(fleet__replicas=4))
    for prompt in range(10):
        picks = {pick(router, request(i, ["s"], system_prompt=prompt), reps, 0.0) for i in range(5)}
        assert len(picks) == 1


def test_consistent_hash_moves_few_prompts_when_a_replica_is_added():
    four, five = ConsistentHash(scenario(fleet__replicas=4)), ConsistentHash(scenario(fleet__replicas=5))
    reps4, reps5 = fleet(4), fleet(5)
    moved = sum(pick(four, request(0, ["s"], system_prompt=p), reps4, 0.0)
                != pick(five, request(0, ["s"], system_prompt=p), reps5, 0.0) for p in range(2000))
    assert 200 < moved < 650  # about a fifth should move to the new replica; a modulo hash moves ~80%


def test_consistent_hash_ignores_load():
    reps = fleet(3)
    router = ConsistentHash(scenario(fleet__replicas=3))
    first = pick(router, request(0, ["s"], system_prompt=1), reps, 0.0)
    busy(reps[first], 100.0)
    assert pick(router, request(1, ["s"], system_prompt=1), reps, 0.0) == first


def _warm(replica, keys):
    replica.tree.insert(tuple(keys), (100,) * len(keys))


def test_cache_aware_takes_the_longest_match():
    reps = fleet(3)
    _warm(reps[1], ["s", "u1"])
    _warm(reps[2], ["s", "u1", "a1"])
    router = CacheAware(scenario(router__kind="cache_aware"))
    assert pick(router, request(0, ["s", "u1", "a1", "u2"]), reps, 0.0) == 2
    assert pick(router, request(1, ["s", "u1", "x"]), reps, 0.0) == 1  # 1 and 2 tie on match and load: lower index
    busy(reps[1], 0.3)
    assert pick(router, request(2, ["s", "u1", "x"]), reps, 0.0) == 2  # equal match, less backlog


def test_cache_aware_spills_past_the_threshold_only():
    reps = fleet(3)
    _warm(reps[0], ["s", "u1"])
    busy(reps[1], 0.1)
    router = CacheAware(scenario(router__kind="cache_aware", router__spill_threshold_s=0.5))
    busy(reps[0], 0.6)  # 0.6 - 0.0 > 0.5: spill to the least loaded, replica 2
    assert pick(router, request(0, ["s", "u1", "u2"]), reps, 0.0) == 2
    busy(reps[0], 0.5)  # exactly at the threshold: stay with the cache
    assert pick(router, request(1, ["s", "u1", "u2"]), reps, 0.0) == 0


def test_cache_aware_with_the_threshold_off_never_spills():
    reps = fleet(2)
    _warm(reps[0], ["s"])
    busy(reps[0], 1000.0)
    router = CacheAware(scenario(router__kind="cache_aware", router__spill_threshold_s="off"))
    assert pick(router, request(0, ["s", "u"]), reps, 0.0) == 0


def test_cache_aware_without_any_match_is_least_loaded():
    reps = fleet(3)
    busy(reps[0], 0.3)
    busy(reps[2], 0.1)
    router = CacheAware(scenario(router__kind="cache_aware"))
    assert pick(router, request(0, ["new"]), reps, 0.0) == 1
