"""What the router saw: the decision snapshot and the counterfactual TTFT of every other replica."""

import json

import pytest

from lab.cli.main import main
from model import Scenario, ScenarioError, simulate
from model.studies.hindsight import explain


def scenario(**text):
    return Scenario().with_text({k.replace("__", "."): str(v) for k, v in text.items()})


def test_round_robin_regret_is_the_gap_to_the_warmest_replica():
    s = scenario(router__kind="round_robin", fleet__replicas=3)
    seen = explain(s, 40)
    result = simulate(s)
    rows = seen["replicas"]
    assert seen["chosen"] == result.records[40].replica
    assert rows[seen["chosen"]]["ttft_ms"] == result.records[40].ttft_ms  # the run as it happened
    for row in rows:
        forced = simulate(s, force={40: row["replica"]})
        assert forced.records[40].replica == row["replica"] and forced.records[40].ttft_ms == row["ttft_ms"]
    best = min((r for r in rows if r["replica"] != seen["chosen"]), key=lambda r: r["ttft_ms"])
    assert seen["best_alternative"] == best["replica"]
    assert seen["regret_ms"] == pytest.approx(max(0.0, rows[seen["chosen"]]["ttft_ms"] - best["ttft_ms"]))
    assert seen["regret_ms"] > 50  # round robin left the request's history on another replica
    assert max(rows, key=lambda r: r["actual_tokens"])["replica"] == best["replica"]


def test_the_snapshot_is_taken_before_the_request_is_placed():
    s = scenario(router__kind="least_loaded", fleet__replicas=2, traffic__session_rate=8)
    seen = explain(s, 300)
    chosen = seen["replicas"][seen["chosen"]]
    assert chosen["score"] == chosen["backlog_s"] == min(r["backlog_s"] for r in seen["replicas"])
    assert seen["score"].startswith("backlog")


def test_a_forced_decision_leaves_every_other_decision_to_the_router():
    s = scenario(router__kind="round_robin", fleet__replicas=4)
    plain, forced = simulate(s), simulate(s, force={10: 3})
    assert forced.records[10].replica == 3 != plain.records[10].replica
    assert [r.replica for r in forced.records[11:]] == [r.replica for r in plain.records[11:]]  # the cursor moved on


def test_the_approximate_view_shows_belief_beside_the_truth():
    s = scenario(router__kind="cache_aware", router__view="approximate", fleet__memory_gb=0.25, duration_s=90)
    wrong = [explain(s, rid) for rid in (300, 400, 500)]
    assert any(r["believed_tokens"] > r["actual_tokens"] for seen in wrong for r in seen["replicas"])


def test_asking_for_a_request_that_does_not_exist_names_the_range():
    with pytest.raises(ScenarioError, match="requests 0 to"):
        explain(Scenario(), 10**6)


def test_the_cli_explains_a_request_as_json(capsys):
    assert main(["run", "--set", "router.kind=round_robin", "--set", "fleet.replicas=3", "--explain", "40",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["request"] == 40 and len(data["replicas"]) == 3 and data["regret_ms"] > 50


def test_the_cli_refuses_an_unknown_request_in_one_line(capsys):
    assert main(["run", "--explain", "999999"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "requests 0 to" in err
