"""The lab's simulation with `router.kind=sglang` decides as the real sgl-router 0.3.2 does, on the same requests and loads.

The lab runs its own chat traffic; the real router (bench/router_harness.py,
four fake workers on 127.0.0.1) is then sent the same prompts as text, in
arrival order, and each answer is released when the simulated request ended
(in lab mode, at its first token), so the router's in-flight counts are the
simulation's as long as both chose alike. The replica the lab takes on a
tie is the lowest index; the router's, the first in its own worker order:
replica r is the router's r-th worker in that order.
"""

import os
import sys

import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from router_harness import RouterSession, installed  # noqa: E402

from model import Scenario, SGLangRouter  # noqa: E402
from model.engines.lab import Run  # noqa: E402
from model.routing.text import Renderer  # noqa: E402

pytestmark = pytest.mark.skipif(not installed("sglang") and not os.environ.get("CI"),  # CI installs it: fail there
                                reason="sglang-router is not installed (the test extra pins it: pip install -e '.[test]')")

REQUESTS = 160
SETTINGS = {"router.kind": "sglang", "traffic.session_rate": "8", "router.balance_abs_threshold": "2",
            "router.balance_rel_threshold": "1.2"}


def simulated():
    """The first REQUESTS decisions of the lab's run: text, in-flight counts, replica, and when each request ended."""
    run = Run(Scenario().with_text(SETTINGS))
    renderer, seen = Renderer(), []

    def look(view, chosen):
        if len(seen) < REQUESTS:
            r = view.request
            seen.append((r.id, renderer.prompt(r.keys, r.sizes), [x.in_flight() for x in view.replicas], chosen,
                         tuple(zip(r.keys, r.sizes))))

    run.dispatch.watch = look
    result = run.finish()
    ends = {i: rec.arrival_s + rec.ttft_ms / 1000 for i, rec in enumerate(result.records)}  # records: by request id
    arrivals = {i: rec.arrival_s for i, rec in enumerate(result.records)}
    return seen, ends, arrivals, result


def _shared_tokens(a, b):
    """Tokens of the segments two prompts share from their start."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += x[1]
    return n


def test_a_simulated_run_makes_the_real_routers_decisions_on_the_same_requests_and_loads():
    seen, ends, arrivals, _ = simulated()
    assert len({tuple(x[2]) for x in seen}) > 5  # loads vary: the router sees more than ties at zero
    with RouterSession("sglang", 4, ["--balance-abs-threshold", "2", "--balance-rel-threshold", "1.2"]) as session:
        order = session.tie_order  # replica r is worker order[r]
        sent: dict[int, int] = {}  # request id -> the harness's index of its send
        open_ = []  # request ids sent and not yet released, by their simulated end
        for rid, text, *_ in seen:
            for done in sorted((i for i in open_ if ends[i] <= arrivals[rid]), key=lambda i: ends[i]):
                session.release(sent[done])
                open_.remove(done)
            sent[rid] = len(sent)
            session.send(text)
            open_.append(rid)
        rec = session.recording()
    got = [(list(d.in_flight), d.chosen) for d in rec.decisions]
    want = [([loads[order.index(w)] for w in range(4)], order[chosen]) for _, _, loads, chosen, _ in seen]
    first_apart = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), None)
    assert first_apart is None, f"decision {first_apart}: router {got[first_apart]}, lab {want[first_apart]}"
    assert len(got) == REQUESTS
    router = SGLangRouter(4, 0.3, 2, 1.2)  # the same decisions through the lab's rule alone, to see each one's branch
    taken, earlier = set(), []
    for _, text, loads, chosen, segments in seen:
        d = router.decide(text, loads, 0.0)
        taken.add(d.branch)
        router.routed(text, chosen)
        if d.branch != "balance":  # keys and text agree: characters matched are 4 a token of the segments matched
            assert d.matched_chars == 4 * max((_shared_tokens(segments, e) for e in earlier), default=0)
        earlier.append(segments)
    assert taken == {"balance", "cache", "low_match"}, taken  # the stream went through every branch of the rule
