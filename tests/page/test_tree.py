"""The radix tree drawn: one replica's tree at a moment of a run, as the model holds it, on the page and in an embed."""

import pytest

import lab.page.view as view
from lab.page.figures import FIGURES, Context, tree_page
from lab.page.figures.tree import tree_blocks
from model import Scenario, simulate, simulate_with_trees, tree_at

SURGE = Scenario().with_text({"events": "surge@60+60"})


def context(scenario: Scenario, page: dict | None = None) -> Context:
    return Context(scenario, view.run(scenario), view.run, page or {})


@pytest.mark.parametrize("scenario", [Scenario(), SURGE, Scenario().with_text({"fleet.replicas": "2"})],
                         ids=["default", "surge", "two replicas"])
def test_the_trees_tokens_are_what_the_run_says_each_replica_cached_at_that_moment(scenario):
    r = simulate(scenario)
    s = r.series
    for k in (9, 29, 59):  # a series bin is sampled at its end, after every event of that instant
        for snap in tree_at(scenario, (k + 1) * s.bin_s):
            assert sum(n.tokens for n in snap.nodes) == snap.total_tokens
            assert snap.total_tokens == s.kv_cached_tokens[snap.replica][k] + s.kv_running_tokens[snap.replica][k]
            assert snap.pinned_tokens == s.kv_running_tokens[snap.replica][k]  # lab mode: the locked tokens
            assert snap.pinned_tokens == sum(n.tokens for n in snap.nodes if n.pinned)


def test_in_serving_mode_the_tree_is_the_cache_besides_plus_what_requests_pin():
    scenario = Scenario().with_text({"fleet.decode": "on"})
    s = simulate(scenario).series
    for snap in tree_at(scenario, 31 * s.bin_s):
        assert snap.total_tokens == s.kv_cached_tokens[snap.replica][30] + snap.pinned_tokens > 0


def test_looking_at_the_tree_changes_no_result():
    before = simulate(SURGE)
    tree_at(SURGE, 75.0)
    assert simulate(SURGE) == before


def test_moving_the_time_changes_the_tree():
    early, late = tree_at(Scenario(), 20.0)[0], tree_at(Scenario(), 100.0)[0]
    assert early.total_tokens < late.total_tokens or early.nodes != late.nodes
    assert {n.first_key for n in early.nodes} != {n.first_key for n in late.nodes}
    assert tree_at(Scenario(), 0.0)[0].nodes == ()  # nothing has arrived yet


def test_a_surge_grows_new_branches_and_evicts_old_ones():
    # the surge's 40 prompts start at 60 s: 30 s in, branches the tree did not have at 60 s hang off the root
    at_start = {n.first_key for n in tree_at(SURGE, 60.0)[0].nodes if n.parent < 0}
    during = tree_at(SURGE, 90.0, recent_s=30.0)[0]
    fresh = [n for n in during.nodes if n.parent < 0 and n.new]
    assert fresh and all(n.first_key not in at_start for n in fresh)
    assert during.evicted_tokens > 0 and sum(t for _, t in during.evicted_by_branch) == during.evicted_tokens
    calm = tree_at(Scenario(), 90.0, recent_s=30.0)[0]
    assert len(fresh) > sum(1 for n in calm.nodes if n.parent < 0 and n.new)
    caption = FIGURES["tree"].caption(context(SURGE, {"tree_at": "90"}))
    assert "At 90 s replica 0's radix tree holds" in caption and "evicted" in caption


def test_forty_prompts_and_hundreds_of_sessions_stay_readable():
    busy = Scenario().with_text({"traffic.system_prompts": "40", "traffic.session_rate": "8", "fleet.memory_gb": "40"})
    snap = tree_at(busy)[0]
    blocks = tree_blocks(snap)
    assert len(snap.nodes) > 300 and len(blocks) < len(snap.nodes) / 2
    assert sum(b.tokens for b in blocks if b.depth == 0) == snap.total_tokens  # merging loses no tokens
    assert any("smaller branches" in b.name for b in blocks)


def test_the_trees_widgets_set_page_keys_and_re_run_nothing_the_headline_needs(monkeypatch):
    first = view.handle({"hash": ""})
    assert first["patches"]["bokeh"]["tree:replica"]["options"][:2] == ["replica 0", "replica 1"]
    runs = []
    monkeypatch.setattr(view, "simulate_with_trees", lambda *a, **k: runs.append(a) or simulate_with_trees(*a, **k))
    moved = view.handle({"hash": first["hash"], "controls": {"tree:at": 45.0, "tree:replica": "replica 2"}})
    assert moved["hash"] == "tree_replica=2&tree_at=45" and runs == []
    assert moved["summary"] == first["summary"]
    assert moved["patches"]["dom"]["#cap-tree"]["text"].startswith("At 45 s replica 2's radix tree")
    assert moved["patches"]["bokeh"]["tree:at"]["value"] == 45.0
    assert moved["patches"]["bokeh"]["src:tree"] != first["patches"]["bokeh"]["src:tree"]


def test_bad_tree_values_are_ignored_or_clamped():
    assert tree_page({}, {"tree:at": "soon", "tree:replica": "everything"}) == {}
    assert tree_page({}, {"tree:at": -3.0}) == {}
    c = context(Scenario(), {"tree_replica": "99", "tree_at": "1e9"})
    data = FIGURES["tree"].data(c)
    assert data["tree:replica"]["value"] == "replica 3" and data["tree:at"]["value"] == data["tree:at"]["end"]
    assert view.handle({"hash": "tree_at=nan"})["patches"]["dom"]["#cap-tree"]["text"].startswith("At ")


def test_each_replicas_tree_is_worked_out_when_first_read_and_is_the_same_in_any_order(monkeypatch):
    import model.studies.tree as trees

    scenario = Scenario().with_text({"fleet.replicas": "3", "router.kind": "cache_aware"})
    in_order = tuple(tree_at(scenario))
    made = []
    real = trees._snapshot
    monkeypatch.setattr(trees, "_snapshot", lambda index, *rest: made.append(index) or real(index, *rest))
    _, snaps = simulate_with_trees(scenario)
    assert made == []  # the run made none
    assert snaps[-1] == in_order[2] and snaps[2] is snaps[-1] and made == [2]  # one, kept
    assert [snaps[1], snaps[0]] == [in_order[1], in_order[0]] and snaps == in_order and made == [2, 1, 0]
    assert snaps[:2] == in_order[:2] and len(snaps) == 3
    with pytest.raises(IndexError):
        snaps[3]
