"""The request film's timeline (lab/page/figures/film.py): built from the run's records, its trees in step with the run."""

import json
import random
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.page import view, wire
from lab.page.figures import FIGURES, Context
from lab.page.figures.film import MAX_REQUESTS, _bin, _cells, _Trees, film, frame, stretch
from lab.site.film import film_html
from model import Scenario


def made(text=None):
    scenario = Scenario().with_text(text or {})
    result = view.run(scenario)
    return scenario, result, film(scenario, result)


def test_every_request_of_the_stretch_is_in_it_with_its_own_record():
    scenario, result, f = made()
    assert (f["t0"], f["t1"]) == (0.0, 60.0)
    inside = sorted((r for r in result.records if 0 <= r.arrival_s < 60), key=lambda r: r.arrival_s)
    req = f["requests"]
    assert len(req["arrive"]) == len(inside) > 100
    for i, r in enumerate(inside):
        assert req["replica"][i] == r.replica and req["cached"][i] == r.cached_tokens
        assert req["prompt"][i] == r.prompt_tokens and req["session"][i] == r.session
        assert req["start"][i] == pytest.approx(r.arrival_s + r.queue_ms / 1000, abs=1e-3)
        assert req["end"][i] == pytest.approx(r.arrival_s + r.ttft_ms / 1000, abs=1e-3)
        assert req["arrive"][i] <= req["start"][i] <= req["end"][i]


@pytest.mark.parametrize("text", [{}, {"fleet.replicas": "8"}, {"router.kind": "round_robin"}])
def test_each_replicas_leaves_hold_what_the_run_says_its_cache_held(text):
    """At the end of each bin the leaves add up to the run's own KV figure for the replica (to 2%: which leaf
    loses tokens is the film's reading, and a record that found more than it held moves them)."""
    _, result, f = made(text)
    s = result.series
    checked = 0
    for b, start in enumerate(s.start_s):
        end = start + s.bin_s
        if end > f["t1"] - 1e-9:
            break
        leaves = frame(f, end - 1e-6)["leaves"]
        for k in range(f["replicas"]):
            held = sum(t for i, t in enumerate(leaves) if f["leaves"]["replica"][i] == k)
            run = s.kv_cached_tokens[k][b] + s.kv_running_tokens[k][b]
            assert held == pytest.approx(run, rel=0.02, abs=50), (b, k)
            assert held <= f["capacity"]
            checked += 1
    assert checked >= 40


def test_a_request_starting_finds_exactly_what_its_leaf_and_trunk_hold():
    _, _, f = made()
    req, leaves = f["requests"], f["leaves"]
    for i in range(0, len(req["arrive"]), 7):
        k, system = req["replica"][i], req["system"][i]
        at = frame(f, req["start"][i])["leaves"]
        trunk = [j for j in range(len(at)) if leaves["trunk"][j] and leaves["replica"][j] == k
                 and leaves["system"][j] == system]
        held = at[trunk[0]] if trunk else 0
        if req["cached"][i] >= held:
            assert req["cached"][i] - held in [at[j] for j in range(len(at)) if leaves["replica"][j] == k], i


def test_the_evicted_tokens_are_the_runs_own_count():
    """A stretch of whole bins loses exactly what the run counted as evicted in them."""
    _, result, f = made()
    leaves = list(f["leaves"]["tokens"])
    lost = [0] * f["replicas"]
    for leaf, tokens in zip(f["tree"]["leaf"], f["tree"]["tokens"]):
        if tokens < leaves[leaf]:
            lost[f["leaves"]["replica"][leaf]] += leaves[leaf] - tokens
        leaves[leaf] = tokens
    counted = [sum(row[:20]) for row in result.series.evicted_tokens]  # 20 bins of 3 s: the 60 s stretch
    assert sum(counted) > 0
    for k in range(f["replicas"]):
        assert lost[k] >= counted[k] * 0.97, k  # the run's evictions, and what records said was gone besides


def test_frames_move_each_request_from_the_router_through_its_replica():
    _, _, f = made()
    req = f["requests"]
    i = next(i for i in range(len(req["arrive"])) if req["end"][i] > req["start"][i])
    flight = f["flight_s"]
    assert frame(f, req["arrive"][i] - flight / 2)["phases"][i] == "flying"
    assert frame(f, (req["start"][i] + req["end"][i]) / 2)["phases"][i] == "prefill"
    assert frame(f, req["end"][i] + f["linger_s"] / 2)["phases"][i] == "done"
    assert i not in frame(f, req["end"][i] + f["linger_s"] * 2)["phases"]


def test_an_event_moves_the_stretch_and_a_busy_run_shortens_it():
    scenario = Scenario().with_text({"events": "surge@90+60"})
    assert stretch(scenario, view.run(scenario).records)[0] == 75.0
    busy = Scenario().with_text({"traffic.session_rate": "6"})
    records = view.run(busy).records
    t0, t1 = stretch(busy, records)
    assert sum(1 for r in records if t0 <= r.arrival_s < t1) <= MAX_REQUESTS


def test_the_page_gets_the_film_as_a_dom_patch_and_its_markup_holds_it():
    page = view.render(Scenario())
    text = page["patches"]["dom"]["#film-data"]["text"]
    assert json.loads(text)["replicas"] == 4
    assert '"arrive":{"f64":' in text and wire.loads(text) == film(Scenario(), view.run(Scenario()))  # packed, the same
    assert "#film-data" not in page["patches"]["bokeh"]
    markup = film_html(page)
    assert text in markup and 'aria-pressed="false">Play</button>' in markup
    caption = FIGURES["film"].caption(Context(Scenario(), view.run(Scenario()), view.run))
    assert caption.startswith("The film plays the run from 0 s to 60 s")


def test_without_a_cache_the_requests_play_and_no_tree_grows():
    scenario, result, f = made({"fleet.cache": "false"})
    assert all(c == 0 for c in f["requests"]["cached"])
    assert not any(f["tree"]["tokens"]) and not any(f["leaves"]["tokens"])


def stretch_rule(scenario, records):
    """`stretch` as a filter and a sort of every record: the arrivals inside the 60 s, the 901st ending it early."""
    start = max(0.0, min(e.at_s for e in scenario.events) - 15.0) if scenario.events else 0.0
    end = start + 60.0
    arrivals = sorted(r.arrival_s for r in records if start <= r.arrival_s < end)
    if len(arrivals) > MAX_REQUESTS:
        end = arrivals[MAX_REQUESTS]
    return round(start, 3), round(end, 3)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 2500), st.sampled_from(["", "burst@40+20x3", "surge@3+30"]))
def test_the_stretch_found_by_bisection_is_the_rule_s(seed, n, events):
    rng = random.Random(seed)
    scenario = Scenario().with_text({"events": events} if events else {})
    records = [SimpleNamespace(arrival_s=rng.choice([rng.uniform(0, 120), 30.0, 45.0])) for _ in range(n)]  # ties too
    assert stretch(scenario, records) == stretch_rule(scenario, records)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 15), st.floats(-5, 400, allow_nan=False)), max_size=50),
       st.integers(0, 60), st.sampled_from([0.5, 3.0, 7.25]))
def test_the_cells_written_out_are_each_request_s_bin(ends, bins, bin_s):
    starts = tuple(k * bin_s for k in range(bins))
    records = [SimpleNamespace(replica=r) for r, _ in ends]
    pairs = [(0.0, end) for _, end in ends]
    assert _cells(records, pairs, starts, bin_s, bins) == [(r, _bin(end, starts, bin_s, bins)) for r, end in ends]


def test_eviction_takes_the_least_recently_touched_leaves_tip_first_and_a_trunk_last():
    """The drawing's rule, on one replica: least recently touched first, never the leaf being written, a trunk
    only once no leaf of it holds tokens, an emptied leaf out of the order until it is touched again."""
    trees = _Trees(1, capacity=0)
    trunk = trees.leaf(0, 0, -1)
    old, mid, new = (trees.leaf(0, 0, session) for session in (1, 2, 3))
    for i, tokens in ((trunk, 500), (old, 100), (mid, 100), (new, 100)):
        trees.set(0.0, i, tokens)
        trees.recency[0][i] = None  # touched in this order: the trunk first
    trees.recency[0].pop(old)
    trees.recency[0][old] = None  # `old` touched again: now the most recent
    trees.evict(1.0, 0, 150, keep=new)  # mid (100), then the trunk is skipped (leaves hold tokens), new is kept
    assert [trees.tokens[i] for i in (trunk, old, mid, new)] == [500, 50, 0, 100]
    assert mid not in trees.recency[0]
    trees.evict(2.0, 0, 1_000)  # the trunk, first in the order, still has leaves then: only the leaves go
    assert [trees.tokens[i] for i in (trunk, old, mid, new)] == [500, 0, 0, 0]
    trees.evict(3.0, 0, 1_000)
    assert trees.tokens[trunk] == 0 and trees.held == [0]
    assert [(e[1], e[2]) for e in trees.events[4:]] == [(mid, 0), (old, 50), (new, 0), (old, 0), (trunk, 0)]
