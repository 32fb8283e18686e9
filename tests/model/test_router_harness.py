"""The conformance harness (bench/router_harness.py) against the real sgl-router 0.3.2 binary, on 127.0.0.1.

One short session: three fake workers, the lab's own chat rendered as text,
first sent one request at a time with every answer back before the next (the
low-load pile-up: every load ties at zero, so all go to the first worker in
the router's order), then one prompt held again and again until the busy
worker is more than the absolute threshold ahead (the router then sends even
a cache hit to the least loaded worker).
"""

import os
import sys

import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from router_harness import RouterSession, installed, read_decisions, write_decisions  # noqa: E402

from model import Scenario, generate  # noqa: E402
from model.routing.text import Renderer  # noqa: E402

pytestmark = pytest.mark.skipif(not installed("sglang") and not os.environ.get("CI"),  # CI installs it: fail there
                                reason="sglang-router is not installed (the test extra pins it: pip install -e '.[test]')")

WORKERS = 3
ABS = 4  # the absolute imbalance threshold this session runs with (the launcher's 64 would need 65 held requests)


def test_the_real_router_piles_up_at_low_load_and_sends_past_the_threshold_to_the_least_loaded(tmp_path):
    renderer = Renderer()
    prompts = [renderer.prompt(r.keys, r.sizes) for r in generate(Scenario())[:6]]
    sequential, hot = prompts[:5], prompts[5]
    held_by_fakes = []  # per decision, what each fake was holding just before it
    with RouterSession("sglang", WORKERS, ["--balance-abs-threshold", str(ABS)]) as session:
        for i, text in enumerate(sequential):
            held_by_fakes.append([session.held(w) for w in range(WORKERS)])
            session.send(text)
            session.release(i)
        for _ in range(ABS + 2):
            held_by_fakes.append([session.held(w) for w in range(WORKERS)])
            session.send(hot)
        gauge = session.metric_loads()
        held_now = [session.held(w) for w in range(WORKERS)]
        rec = session.recording()
    first, second = rec.tie_order[0], rec.tie_order[1]
    chosen = [d.chosen for d in rec.decisions]

    assert sorted(rec.tie_order) == list(range(WORKERS))
    assert chosen[:5] == [first] * 5, "one at a time, every load ties: all go to the first worker in the router's order"
    assert chosen[5:5 + ABS + 1] == [first] * (ABS + 1), "a spread of at most the threshold keeps the cache hit"
    assert chosen[-1] == second, "past the threshold the least loaded worker gets it, even a cache hit"
    assert rec.decisions[-1].in_flight[first] == ABS + 1

    # the recorded in-flight counts are what the fakes held, and the router's own gauge says the same
    assert [list(d.in_flight) for d in rec.decisions] == held_by_fakes
    assert gauge == held_now
    # every request reached a fake, once, with its text, and the fake is the decision
    arrivals = sorted((a for f in session.fakes for a in f.received if a.rid.startswith("h")), key=lambda a: a.order)
    assert [a.text for a in arrivals] == [d.text for d in rec.decisions]
    owner = {a.rid: f.index for f in session.fakes for a in f.received}
    assert [owner[a.rid] for a in arrivals] == chosen
    assert session.stats["tie_order_after"] == rec.tie_order

    # the decision file says the same
    path = tmp_path / "decisions.jsonl.gz"
    write_decisions(path, rec)
    head, lines = read_decisions(path)
    assert head["router"] == "sglang-router 0.3.2" and head["policy"] == "cache_aware" and head["workers"] == WORKERS
    assert head["config"] == {"cache_threshold": 0.3, "balance_abs_threshold": ABS, "balance_rel_threshold": 1.5}
    assert head["tie_order"] == rec.tie_order and "max_tree_size" not in head and "eviction_interval_secs" not in head
    assert head["first_request_after_launch_s"] > 0
    assert [line["chosen"] for line in lines] == chosen and lines[-1]["in_flight"] == held_by_fakes[-1]
