"""`model.run_key`: the keys a run reads, from each key's declaration; a key it leaves out cannot move a result."""

import pytest

from model import Scenario, ScenarioError, run_key, simulate
from model.config import KEYS, READS, reads_of, spec_of

SHORT = Scenario().with_text({"duration_s": "30"})


def result_without_scenario(scenario):
    data = simulate(scenario).to_dict()
    data.pop("scenario")
    return data


def changed(key, scenario):
    """`scenario` with `key` at another value inside its range (half, double or the middle: the first the
    scenario's cross-checks accept, a part of a whole staying a part)."""
    spec, value = spec_of(key), scenario.get(key)
    if isinstance(value, bool) or spec.choices:
        others = [not value] if isinstance(value, bool) else [c for c in spec.choices if c != value]
    else:
        lo, hi = spec.page[:2] if spec.page else (spec.lo, spec.hi)
        others = [x for x in (value / 2, value * 2, (lo + hi) / 2) if lo <= x <= hi and x != value]
        others = [int(x) if isinstance(value, int) else float(x) for x in others]
    for other in others:
        try:
            return scenario.with_values({key: other})
        except ScenarioError:
            continue
    raise AssertionError(f"{key}: no other value the scenario accepts")


def test_every_key_declares_which_runs_read_it():
    assert {reads_of(key) for key in KEYS} <= set(READS)


@pytest.mark.parametrize("serving", [False, True])
def test_a_key_left_out_of_the_run_key_moves_no_result(serving):
    base = SHORT.with_values({"fleet.decode": serving})
    left_out = [k for k in KEYS if k not in dict(run_key(base)) and k != "events"]
    assert left_out, "something is left out in either mode (the article's inputs)"
    before = result_without_scenario(base)
    for key in left_out:
        other = changed(key, base)
        assert run_key(other) == run_key(base), key
        assert result_without_scenario(other) == before, f"{key} is left out of run_key but moved the result"


def test_lab_mode_reads_a_links_speed_only_while_it_fetches_over_it():
    lab = SHORT.with_text({"fleet.fetch": "nvme"})
    keys = dict(run_key(lab))
    assert "transfer.nvme_gb_s" in keys and "transfer.rdma_gbps" not in keys and "fleet.token_budget" not in keys
    served = dict(run_key(lab.with_values({"fleet.decode": True})))
    assert {"transfer.nvme_gb_s", "transfer.rdma_gbps", "fleet.token_budget"} <= set(served)
    faster = lab.with_text({"transfer.nvme_gb_s": "0.5"})
    assert run_key(faster) != run_key(lab) and result_without_scenario(faster) != result_without_scenario(lab)
