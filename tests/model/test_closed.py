"""A closed population of users: each sends again only once its answer is out, in conversations that grow."""

import pytest
from helpers import everything

from model import Scenario, ScenarioError, TooManyRequests, simulate
from model.engines.lab import Run
from model.engines.serving_run import ServingRun

SMALL = {"traffic.kind": "closed", "traffic.users": "3", "traffic.prefix_tokens": "100",
         "traffic.sharing_ratio": "0.5", "traffic.answer_mean": "20", "traffic.ramp_s": "3", "duration_s": "30",
         "fleet.replicas": "2", "hardware.preset": "llama8b_a100"}


def finished(values):
    scenario = Scenario().with_text(values)
    run = ServingRun(scenario) if scenario.fleet.decode else Run(scenario)
    return run, run.finish()


def by_user(requests):
    out = {}
    for r in requests:
        out.setdefault(r.session, []).append(r)
    return out


def test_a_conversation_starts_with_the_shared_prefix_and_each_prompt_repeats_the_one_before_and_its_answer():
    run, _ = finished({**SMALL, "fleet.decode": "true"})
    for user, requests in by_user(run.agents.sent).items():
        first = requests[0]
        assert first.keys[0] == ("sys", "closed") and first.sizes == (100, 100)  # tail = 100 x 0.5 / 0.5
        assert first.arrival_s == pytest.approx(user * 3 / 3)  # users start evenly over the ramp
        for before, after in zip(requests, requests[1:]):
            assert after.turn == before.turn + 1
            assert after.keys[:-1] == before.keys + (before.answer_key,)
            assert after.prompt_tokens == before.prompt_tokens + before.answer_tokens + 100
            assert after.cacheable_tokens == after.prompt_tokens - 100 and after.user_tokens == 100


def test_a_user_sends_only_once_its_answer_is_out_and_after_thinking():
    for think in ("0", "2"):
        _, result = finished({**SMALL, "fleet.decode": "true", "traffic.think_s": think})
        records = sorted(result.records, key=lambda r: r.arrival_s)
        for user in range(3):
            mine = [r for r in records if r.session == user]
            assert len(mine) > 3
            for before, after in zip(mine, mine[1:]):
                done = before.arrival_s + before.e2e_ms / 1000
                assert done + 0.5 * float(think) - 3e-6 <= after.arrival_s <= done + 1.5 * float(think) + 3e-6
        assert max(r.arrival_s for r in records) < 30  # no one sends after the window


def test_lab_mode_counts_an_answer_out_when_its_prefill_ends():
    _, result = finished(SMALL)
    assert result.mode == "lab"
    for user in range(3):
        mine = sorted((r for r in result.records if r.session == user), key=lambda r: r.arrival_s)
        for before, after in zip(mine, mine[1:]):
            assert after.arrival_s == pytest.approx(before.arrival_s + before.ttft_ms / 1000, abs=1e-5)


def test_past_the_context_window_a_user_starts_a_new_conversation():
    run, _ = finished({**SMALL, "fleet.decode": "true", "traffic.context_tokens": "400"})
    requests = run.agents.sent
    restarts = [r for r in requests if r.turn == 0 and r.id >= 3]
    assert restarts and all(r.prompt_tokens == 200 for r in restarts)
    assert all(r.prompt_tokens + r.answer_tokens <= 400 for r in requests)
    with pytest.raises(ScenarioError, match="traffic.context_tokens"):
        Scenario().with_text({**SMALL, "traffic.context_tokens": "220"})  # 200 of prompt + up to 30 of answer


def test_the_router_changes_when_users_send_never_what_they_say():
    def contents(router):
        run, _ = finished({**SMALL, "fleet.decode": "true", "router.kind": router})
        return {u: [(r.answer_tokens, r.sizes[-1]) for r in rs][:5] for u, rs in by_user(run.agents.sent).items()}
    assert contents("round_robin") == contents("cache_aware")
    s = Scenario().with_text({**SMALL, "fleet.decode": "true"})
    assert everything(simulate(s)) == everything(simulate(s))


def test_too_many_requests_stop_the_run_at_the_limit():
    with pytest.raises(TooManyRequests):
        ServingRun(Scenario().with_text({**SMALL, "fleet.decode": "true"}), limit=5).finish()


def test_request_hit_rate_counts_continuing_requests_that_found_all_they_repeat():
    _, result = finished({**SMALL, "fleet.decode": "true", "router.kind": "cache_aware"})
    later = [r for r in result.records if r.turn > 0]
    found = [r for r in later if r.cached_tokens >= r.prompt_tokens - r.user_tokens]
    assert result.request_hit_rate == round(len(found) / len(later), 6) > 0.8
    _, spread = finished({**SMALL, "fleet.decode": "true", "router.kind": "round_robin"})
    assert spread.request_hit_rate < result.request_hit_rate
    # tokens and requests count differently: every request holds the shared prefix on every replica
    assert spread.hit_rate > spread.request_hit_rate
