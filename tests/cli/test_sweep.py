"""`prefix-lab sweep`: grids, targets, the cheapest setup, and the same rows locally and on a Dask cluster."""

import json
import logging
import re

import pytest
from helpers import TRACES

from lab.cli.main import main
from lab.cli.sweep import Target, Traffic, cheapest, parse_grid, parse_target, run_points
from lab.common.traces import CommandError
from model import Scenario, scan_trace


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """The synthetic trace's first 400 requests."""
    path = tmp_path_factory.mktemp("traces") / "synthetic-400.jsonl"
    with open(TRACES / "synthetic_trace.jsonl", "rb") as f:
        path.write_bytes(b"".join(next(f) for _ in range(400)))
    return path


@pytest.fixture(scope="module")
def cluster():
    """A local Dask cluster in this process: a real scheduler and worker, reached by address.

    Dask's logging setup quiets Tornado's loggers for the whole process (`tornado` at CRITICAL, not propagating):
    they are put back afterwards, or the tests that read the server's access log would see nothing."""
    loggers = [logging.getLogger(name) for name in ("tornado", "tornado.application", "tornado.access")]
    saved = [(log, log.level, log.propagate, list(log.handlers)) for log in loggers]
    distributed = pytest.importorskip("dask.distributed")  # its import sets them
    try:
        with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                      dashboard_address=None) as c:
            yield c.scheduler_address
    finally:
        for log, level, propagate, handlers in saved:
            log.setLevel(level)
            log.propagate = propagate
            log.handlers[:] = handlers


def test_grid_values_are_lists_and_ranges():
    grid = parse_grid(["fleet.replicas=2:5", "router.kind=cache_aware,round_robin", "fleet.memory_gb=0.5:2:0.5,none"])
    assert grid == {"fleet.replicas": ["2", "3", "4", "5"], "router.kind": ["cache_aware", "round_robin"],
                    "fleet.memory_gb": ["0.5", "1", "1.5", "2", "none"]}
    assert parse_grid(["seed=1,2,1:3"]) == {"seed": ["1", "2", "3"]}


@pytest.mark.parametrize("item, message", [
    ("fleet.replicas", "write KEY=VALUES"),
    ("fleet.replicas=5:1", "a range needs START <= END and a STEP above 0"),
    ("fleet.replicas=1:3:0", "a range needs START <= END"),
    ("fleet.replicas=a:b", "a range is START:END or START:END:STEP, in numbers"),
    ("fleet.replicas=1,,2", "an empty value between commas"),
])
def test_bad_grids_say_what_to_write(item, message):
    with pytest.raises(CommandError, match=message):
        parse_grid([item])


def test_targets_name_a_figure_and_a_bound():
    assert parse_target("ttft_p99_ms<=500") == Target("ttft_p99_ms", "<=", 500.0)
    assert parse_target("hit_rate >= 0.5").holds({"hit_rate": 0.6})
    with pytest.raises(CommandError, match="not a figure; use one of requests, hit_rate"):
        parse_target("speed<=3")
    with pytest.raises(CommandError, match="write FIGURE<=VALUE"):
        parse_target("ttft_p99_ms<500")


def test_the_cheapest_meeting_the_targets_has_fewest_replicas_then_least_memory_then_gpu_seconds():
    rows = [{"replicas": 4, "memory_gb": 2.0, "prefill_gpu_s": 5.0, "ttft_p99_ms": 100},
            {"replicas": 2, "memory_gb": 8.0, "prefill_gpu_s": 9.0, "ttft_p99_ms": 900},
            {"replicas": 3, "memory_gb": None, "prefill_gpu_s": 1.0, "ttft_p99_ms": 300},
            {"replicas": 3, "memory_gb": 4.0, "prefill_gpu_s": 7.0, "ttft_p99_ms": 400},
            {"replicas": 3, "memory_gb": 4.0, "prefill_gpu_s": 6.0, "ttft_p99_ms": 450}]
    assert cheapest(rows, [Target("ttft_p99_ms", "<=", 500)]) == 4
    assert cheapest(rows, []) == 1
    assert cheapest(rows, [Target("ttft_p99_ms", "<=", 50)]) is None


def test_local_processes_and_a_dask_cluster_give_the_same_rows(trace, cluster):
    base = Scenario().with_text({"fleet.prefill_tokens_per_s": "50000"})
    scenarios = [base.with_text({"fleet.replicas": n, "router.kind": k}) for n in ("2", "3")
                 for k in ("cache_aware", "round_robin")]
    traffic = Traffic(str(trace), scan_trace([trace.read_bytes()]))
    inline = run_points(scenarios, traffic, workers=1)
    assert run_points(scenarios, traffic, workers=2) == inline
    assert run_points(scenarios, traffic, scheduler=cluster) == inline
    synthetic = [Scenario().with_text({"duration_s": "30", "fleet.replicas": n}) for n in ("1", "2")]
    assert run_points(synthetic, scheduler=cluster) == run_points(synthetic, workers=2)
    assert [r["replicas"] for r in inline] == [2, 2, 3, 3] and all(r["requests"] == 400 for r in inline)


def test_the_sweep_verb_prints_a_table_writes_json_and_draws_the_plot(trace, tmp_path, capsys):
    out, page = tmp_path / "sweep.json", tmp_path / "sweep.html"
    assert main(["sweep", "--traffic", str(trace), "--grid", "fleet.replicas=1:3", "--grid",
                 "router.kind=cache_aware,round_robin", "--set", "fleet.prefill_tokens_per_s=50000",
                 "--target", "ttft_p99_ms<=5000", "--workers", "2", "--json-out", str(out), "--plot", str(page)]) == 0
    text = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert len(data["rows"]) == 6 and data["targets"] == ["ttft_p99_ms<=5000"]
    best = data["rows"][data["cheapest"]]
    assert all(r["ttft_p99_ms"] > 5000 for r in data["rows"] if r["replicas"] < best["replicas"])
    assert f"* cheapest meeting ttft_p99_ms<=5000: fleet.replicas={best['fleet.replicas']}" in text
    html = page.read_text()
    assert "Bokeh" in html and "TTFT p99" in html
    assert not re.search(r"<(script|link)[^>]*(src|href)=[\"']?(https?:)?//", html)  # BokehJS inline: opens offline


def test_a_sweep_over_a_trace_refuses_traffic_keys_and_a_bad_trace(trace, tmp_path, capsys):
    assert main(["sweep", "--traffic", str(trace), "--grid", "traffic.session_rate=1,2"]) == 2
    assert "--grid traffic.session_rate: replayed traffic comes from the trace" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(trace.read_text().splitlines()[0] + "\n{\n")
    assert main(["sweep", "--traffic", str(bad), "--grid", "fleet.replicas=1,2"]) == 2
    assert capsys.readouterr().err.startswith(f"prefix-lab: error: {bad} line 2: not JSON")
    assert main(["sweep", "--grid", "router.kind=cache_aware,round_robin", "--plot", str(tmp_path / "p.html"),
                 "--set", "duration_s=20"]) == 2
    assert "--plot: the plot needs a numeric grid key" in capsys.readouterr().err
