"""sgl-router 0.3.2's cache-aware rule and its tree of routed text, on cases small enough to follow by hand."""

import pytest
from helpers import ROOT, fleet, request
from hypothesis import given
from hypothesis import strategies as st

from model import Scenario, simulate
from model.routing.policies.sglang import SGLang
from model.routing.sglang import SGLANG_LAUNCHER, VLLM_LAUNCHER, SGLangRouter, VLLMRouterRule, f32
from model.routing.text import CHARS_PER_TOKEN, FILLER, Renderer
from model.routing.textree import TextTree
from model.routing.view import View


def scenario(**text):
    return Scenario().with_text({k.replace("__", "."): str(v) for k, v in text.items()})


# -- the tree ------------------------------------------------------------------------------------

def test_a_partial_match_splits_a_node_and_names_the_replica_at_the_deepest_node():
    tree = TextTree(2)
    tree.insert("hello", 0)
    tree.insert("help", 1)  # splits "hello" into "hel" + "lo"; "p" is replica 1's leaf
    tree.check_invariants()
    assert tree.match("help me") == (4, 1)
    assert tree.match("hello world") == (5, 0)
    assert tree.match("helium") == (3, 0)  # "hel" was made by replica 0's insert: it keeps that name
    assert tree.match("xyz") == (0, 0)
    assert tree.chars == [5, 4]  # replica 1 holds "hel" and "p"


def test_an_equal_match_on_several_replicas_names_the_first_that_routed_it_not_the_idler():
    tree = TextTree(3)
    tree.insert("system prompt", 2)
    tree.insert("system prompt", 0)
    tree.insert("system prompt", 1)
    assert tree.match("system prompt, and a question")[1] == 2


def test_every_match_advances_the_count_and_one_in_eight_refreshes_the_stamp():
    tree = TextTree(1)  # registering replica 0 spends count 0
    tree.insert("abc", 0)  # count 1
    leaf = tree.root.children["a"]
    assert leaf.stamps == {0: 1}
    for _ in range(6):  # counts 2..7: no refresh
        tree.match("abc")
    assert leaf.stamps == {0: 1}
    tree.match("abc")  # count 8
    assert leaf.stamps == {0: 8}


def test_eviction_trims_each_replica_by_its_least_recent_leaves_and_keeps_shared_nodes():
    tree = TextTree(2)
    tree.insert("aaaa" + "bbbb", 0)  # one leaf "aaaabbbb"
    tree.insert("aaaa" + "cccc", 0)  # split: "aaaa" -> "bbbb", "cccc"
    tree.insert("aaaa" + "dddd", 1)
    tree.check_invariants()
    assert tree.chars == [12, 8]
    tree.evict(8)  # replica 0 over by 4: its oldest leaf, "bbbb", goes; replica 1 fits
    tree.check_invariants()
    assert tree.chars == [8, 8]
    assert "b" not in tree.root.children["a"].children
    assert tree.match("aaaacccc") == (8, 0)
    tree.evict(0)  # everything goes; a node no replica holds is removed
    tree.check_invariants()
    assert tree.chars == [0, 0] and not tree.root.children


def test_after_its_namer_is_evicted_a_node_names_the_replica_left_there():
    tree = TextTree(2)
    tree.insert("shared" + "x" * 10, 0)
    tree.insert("shared", 1)  # "shared" split off, named by 0, held by both
    tree.insert("q" * 5, 0)
    assert tree.match("shared!") == (6, 0)
    tree.evict(6)  # replica 0 (21 chars) loses its oldest leaf, then "shared"; replica 1 (6) fits
    tree.check_invariants()
    assert tree.chars == [5, 6]
    assert tree.match("shared!") == (6, 1)


# -- the rule ------------------------------------------------------------------------------------

def test_balance_needs_both_thresholds_and_takes_the_first_least_loaded_in_the_routers_order():
    router = SGLangRouter(3, balance_abs_threshold=2, balance_rel_threshold=1.5, order=[2, 0, 1])
    router.routed("prompt", 0)
    assert router.decide("prompt", [3, 0, 0], 0).worker == 2  # imbalanced; 1 and 2 tie, 2 comes first
    assert router.decide("prompt", [3, 1, 1], 0).worker == 0  # 3 - 1 is not > 2: balanced, follow the tree
    assert router.decide("prompt", [12, 9, 9], 0).worker == 0  # 12 - 9 > 2 but 12 is not > 9 x 1.5


def test_the_imbalance_ratio_is_compared_in_32_bit_floats():
    router = SGLangRouter(2, balance_abs_threshold=0, balance_rel_threshold=1.3)
    assert 117 <= 90 * 1.3 and 117 > f32(f32(90) * f32(1.3))  # in 64 bits balanced, in 32 imbalanced
    router.routed("prompt", 0)
    assert router.decide("prompt", [117, 90], 0).branch == "balance"


def test_below_the_threshold_the_router_takes_the_least_loaded_not_the_smallest_tree():
    router = SGLangRouter(3, cache_threshold=0.5)
    router.routed("a" * 100 + "b" * 200, 0)  # a big tree on 0
    router.routed("c" * 10, 2)  # a small one on 2
    low = router.decide("a" * 100 + "z" * 200, [1, 0, 0], 0)  # a third matches: not above 0.5
    assert (low.branch, low.worker) == ("low_match", 1)  # the least loaded; 2 has the smaller tree
    hit = router.decide("a" * 100 + "b" * 100, [1, 0, 0], 0)
    assert (hit.branch, hit.worker) == ("cache", 0)


def test_eviction_runs_on_the_timer_from_the_routers_start():
    router = SGLangRouter(1, eviction_interval_s=10, max_tree_size=4)
    router.routed("abcdefgh", 0)
    router.decide("x", [0], 9.9)
    assert router.tree.chars == [8]
    router.decide("x", [0], 10.0)  # the tick at 10 s trims to 4 characters: the whole leaf goes
    assert router.tree.chars == [0] and router.next_eviction_s == 20
    router.routed("abcdefgh", 0)
    router.decide("x", [0], 55.0)  # ticks at 20..50 s: one trim does for all of them
    assert router.tree.chars == [0] and router.next_eviction_s == 60


def test_the_defaults_are_the_launchers():
    r = Scenario().router
    assert (r.cache_threshold, r.balance_abs_threshold, r.balance_rel_threshold, r.eviction_interval_s,
            r.max_tree_chars) == (0.3, 64, 1.5, 60, 2 ** 26)
    assert SGLANG_LAUNCHER == {"cache_threshold": 0.3, "balance_abs_threshold": 64, "balance_rel_threshold": 1.5,
                        "eviction_interval_secs": 60, "max_tree_size": 2 ** 26}


# -- text ----------------------------------------------------------------------------------------

def test_text_shares_exactly_the_characters_of_shared_segments():
    r = Renderer()
    a, b = r.prompt(("sys", "u1"), (3, 2)), r.prompt(("sys", "u2"), (3, 2))
    assert len(a) == 5 * CHARS_PER_TOKEN and a[:12] == b[:12] and a[12] != b[12]
    assert a[1:12] == FILLER * 11 and r.prompt(("sys",), (0,)) == ""


# -- the policy in a run -------------------------------------------------------------------------

def test_the_policy_knows_only_what_it_routed_not_the_replicas_trees():
    reps = fleet(2)
    reps[1].tree.insert(("s", "u"), (100, 50))  # replica 1 holds the prompt; the router never routed it
    policy = SGLang(scenario(router__kind="sglang"))
    assert policy.choose(View(request(0, ["s", "u"], sizes=[100, 50]), reps, 0.0)) == 0  # tied loads: first
    assert policy.sent(0) == 0  # it believed nothing was there


def test_at_low_load_every_request_piles_onto_one_replica():
    result = simulate(scenario(router__kind="sglang"))
    assert {rec.replica for rec in result.records} == {0}
    assert not any("own tree" in note for note in result.notes)  # router.view left alone: nothing to say
    told = simulate(scenario(router__kind="sglang", router__view="approximate"))
    assert any("own tree" in note and "does not apply" in note for note in told.notes)


def test_router_view_does_not_change_what_sglang_decides():
    base = simulate(scenario(router__kind="sglang", traffic__session_rate=8))
    other = simulate(scenario(router__kind="sglang", traffic__session_rate=8, router__view="approximate"))
    assert [r.replica for r in base.records] == [r.replica for r in other.records]
    assert len({r.replica for r in base.records}) > 1  # busy enough to spread


@pytest.mark.parametrize("key", ["router.balance_abs_threshold"])
def test_the_imbalance_control_reaches_past_the_default(key):
    from model import spec_of
    assert spec_of(key).page[1] >= 128


def test_a_shared_template_is_one_segment_every_system_prompt_starts_with():
    from model import generate
    plain = generate(scenario(traffic__system_prompts=3))
    shared = generate(scenario(traffic__system_prompts=3, traffic__template_tokens=750))
    assert [r.prompt_tokens for r in plain] == [r.prompt_tokens for r in shared]  # the same traffic, re-cut
    assert {r.keys[0] for r in plain} != {r.keys[0] for r in shared} == {("template", 0)}
    assert all(r.sizes[0] == 200 and r.keys[1] in (("template", 200), ("dyn", r.id)) for r in shared)  # cut at 200
    r = Renderer()
    a, b = (next(x for x in shared if x.system_prompt == p) for p in (0, 1))
    text_a, text_b = r.prompt(a.keys, a.sizes), r.prompt(b.keys, b.sizes)
    tree = TextTree(1)
    tree.insert(text_a, 0)
    assert tree.match(text_b)[0] == 750 * CHARS_PER_TOKEN  # the router finds the template in another prompt


def test_a_template_longer_than_the_system_prompt_is_refused():
    from model import ScenarioError
    with pytest.raises(ScenarioError, match="traffic.template_tokens: 2000 is more than a whole system prompt"):
        scenario(traffic__template_tokens=2000)


def test_explain_shows_what_its_tree_believed_before_the_request_was_added():
    from model import explain
    seen = explain(scenario(router__kind="sglang", traffic__session_rate=6), 400)
    d = seen["decision"]
    assert seen["view"] == "own" and d["branch"] == "cache" and d["named"] == seen["chosen"]
    chosen = seen["replicas"][seen["chosen"]]
    assert 0 < chosen["believed_tokens"] < seen["prompt_tokens"]  # its match, not the whole prompt it then added
    assert chosen["believed_tokens"] == round(d["match_rate"] * seen["prompt_tokens"])
    assert f"{d['match_rate']:.0%}" in d["why"]


# -- vLLM's router ------------------------------------------------------------------------------------

def test_vllms_router_sends_an_equal_match_to_the_least_loaded_holder():
    sgl, vllm = SGLangRouter(3), VLLMRouterRule(3)
    for router in (sgl, vllm):
        router.routed("system prompt", 0)
        router.routed("system prompt", 2)
    assert sgl.decide("system prompt?", [5, 0, 3], 0).worker == 0  # the first to route it, however busy
    assert vllm.decide("system prompt?", [5, 0, 3], 0).worker == 2  # the least loaded of the holders, not 1
    assert vllm.decide("system prompt?", [3, 0, 3], 0).worker == 0  # equal loads: the first in order


def test_every_recorded_decision_file_agrees_with_its_policy_at_least_99_percent():
    """The files bench/conformance_record.py recorded from the real binaries (sgl-router 0.3.2, vllm-router 0.1.17)."""

    from lab.cli.conformance import policy_of, read_decisions, replay
    files = sorted((ROOT / "bench" / "conformance").glob("*.jsonl.gz"))
    assert len(files) >= 20
    seen = set()
    for path in files:
        header, decisions = read_decisions(str(path))
        policy = policy_of(header)
        out = replay(header, decisions, policy)
        assert out["agree"] >= 0.99 * out["decisions"], (path.name, out["by_cause"])
        seen.add((policy, len(decisions), header["cache_threshold"]))
    for policy in ("sglang", "vllm_router"):  # 300 sequential and 450 concurrent, at three parameter sets
        assert {(n, c) for p, n, c in seen if p == policy} >= {(300, 0.3), (450, 0.3), (300, 0.5), (450, 0.5),
                                                                (300, 0.7), (450, 0.7)}


def test_a_match_ending_inside_a_node_names_that_nodes_replica_not_its_parents():
    tree = TextTree(2)
    tree.insert("ab", 0)
    tree.insert("abcd", 1)  # "ab" (0, then 1) -> "cd" (1)
    assert tree.match("abcx") == (3, 1)
    tree.check_invariants()


def test_registration_spends_one_count_a_replica_and_the_balance_branch_none():
    assert TextTree(3).count == 3
    router = SGLangRouter(2, balance_abs_threshold=0, balance_rel_threshold=1.0)
    router.routed("abc", 0)  # count 2 -> 3
    assert router.decide("abc", [1, 0], 0).branch == "balance" and router.tree.count == 3  # no match walked
    assert router.decide("abc", [0, 0], 0).branch == "cache" and router.tree.count == 4


def test_empty_text_and_a_single_worker():
    router = SGLangRouter(1)
    d = router.decide("", [5], 0)
    assert (d.worker, d.branch, d.text_chars) == (0, "low_match", 0) and router.tree.count == 2
    router.routed("", 0)
    router.routed("abc", 0)
    assert router.decide("abc", [7], 0) == (0, "cache", 3, 3, 0)


def test_the_routers_defaults_are_their_launchers():
    for rule, launcher in ((SGLangRouter, SGLANG_LAUNCHER), (VLLMRouterRule, VLLM_LAUNCHER)):
        r = rule(2)
        assert (r.cache_threshold, r.abs_threshold, r.rel_threshold, r.interval_s) == (
            f32(launcher["cache_threshold"]), launcher["balance_abs_threshold"],
            f32(launcher["balance_rel_threshold"]), launcher["eviction_interval_secs"])
        assert r.max_chars == launcher["max_tree_size"] // rule.UNITS_PER_CHAR


def test_a_forced_decision_puts_the_text_where_the_request_went():
    from model.routing.dispatch import Dispatcher
    reps = fleet(2)
    d = Dispatcher(scenario(router__kind="sglang"), force={0: 1})
    d.route(request(0, ["s", "u"], sizes=[100, 50]), reps, 0.0)  # the router would pick 0; forced to 1
    tree = d.policy.router.tree
    text = d.policy.text
    assert tree.held(text, 1) == len(text) and tree.held(text, 0) == 0


@given(st.lists(st.tuples(st.sampled_from(["insert", "match", "evict"]), st.text("abc", max_size=8),
                          st.integers(0, 2), st.integers(0, 12)), max_size=40))
def test_the_tree_keeps_its_invariants_and_its_bound_under_any_operations(ops):
    tree = TextTree(3)
    for op, text, replica, bound in ops:
        if op == "insert":
            tree.insert(text, replica)
        elif op == "match":
            matched, named = tree.match(text)
            assert 0 <= matched <= len(text) and (matched == 0 or named is not None)
        else:
            tree.evict(bound)
            assert all(c <= bound for c in tree.chars)
        tree.check_invariants()
