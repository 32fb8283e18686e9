"""The load chart's cells, built a replica's row at a time: one cell per replica and bin, busy share capped at 100%."""

from lab.page.figures import Context
from lab.page.figures.base import bin_mids, replica_name
from lab.page.figures.fleet import _load_data
from model import Scenario, simulate


def cells_one_by_one(result) -> tuple[list, list, list, list]:
    s, mids = result.series, bin_mids(result)
    t, replica, busy, backlog = [], [], [], []
    for i, (loads, queued) in enumerate(zip(s.replica_load, s.replica_backlog_s)):
        for mid, load, q in zip(mids, loads, queued):
            t.append(mid)
            replica.append(replica_name(i))
            busy.append(round(min(load, 1.0) * 100, 1))
            backlog.append(round(q, 3))
    return t, replica, busy, backlog


def test_the_cells_are_the_ones_placed_one_by_one_including_a_saturated_replica():
    busiest = []
    for text in ({"fleet.replicas": "1", "traffic.session_rate": "20"}, {"fleet.replicas": "3"}):
        scenario = Scenario().with_text(text)
        result = simulate(scenario, limit=40_000)
        data = _load_data(Context(scenario, result, simulate))["src:load"]["data"]
        assert (data["t"], data["replica"], data["busy"], data["backlog"]) == cells_one_by_one(result)
        assert len(data["t"]) == len(result.replicas) * len(result.series.start_s)
        busiest.append(max(data["busy"]))
    assert busiest[0] == 100.0 and busiest[1] < 100.0  # the lone replica is saturated: its cells stop at 100%
