"""The synthetic traffic: exact prompt structure, then statistics over long runs."""

import hashlib
import json
import statistics
from collections import Counter, defaultdict

import pytest

from model import Scenario, TooManyRequests, generate, simulate


def long_run(**text):
    return Scenario().with_text({"duration_s": "3600", **text})


@pytest.fixture(scope="module")
def hour():
    return generate(long_run())


def sessions_of(requests):
    by = defaultdict(list)
    for r in requests:
        by[r.session].append(r)
    return by


def test_a_prompt_is_system_prompt_history_and_new_turn():
    reqs = generate(Scenario())
    later = next(r for r in reqs if r.turn == 2)
    first, second = [r for r in reqs if r.session == later.session][:2]
    assert later.keys[:2] == (("sys", later.system_prompt, 0), ("sys", later.system_prompt, 1))
    assert later.sizes[:2] == (200, 1300)
    assert later.keys[2:] == (("user", later.session, 0), ("answer", later.session, 0),
                              ("user", later.session, 1), ("answer", later.session, 1),
                              ("user", later.session, 2))
    assert later.sizes[2:] == (first.user_tokens, first.answer_tokens, second.user_tokens,
                               second.answer_tokens, later.user_tokens)
    assert later.prompt_tokens == sum(later.sizes)
    assert later.keys[:-1] + (later.answer_key,) != later.keys  # the answer is a new segment


@pytest.mark.parametrize("mode", ["none", "top", "bottom"])
def test_prompt_and_cacheable_tokens_are_consistent_with_the_segments(mode):
    for r in generate(Scenario().with_text({"dynamic_text": mode, "duration_s": "120"})):
        assert r.prompt_tokens == sum(r.sizes)
        fresh = next(i for i, k in enumerate(r.keys) if k[0] == "dyn" or k == ("user", r.session, r.turn))
        assert r.cacheable_tokens == sum(r.sizes[:fresh])  # everything before the first new segment


def test_dynamic_text_top_sits_at_the_cut_and_bottom_at_the_end():
    top = generate(Scenario().with_text({"dynamic_text": "top"}))[5]
    assert top.keys[1] == ("dyn", top.id) and top.sizes[:3] == (200, 20, 1300)
    bottom = generate(Scenario().with_text({"dynamic_text": "bottom"}))[5]
    assert bottom.keys[-1] == ("dyn", bottom.id) and bottom.keys[:2] == top.keys[::2][:2]


def test_a_timestamp_event_moves_dynamic_text_to_the_top_from_then_on():
    reqs = generate(Scenario().with_text({"events": "timestamp@100"}))
    for r in reqs:
        assert (("dyn", r.id) in r.keys) == (r.arrival_s >= 100), r
        if r.arrival_s >= 100:
            assert r.keys.index(("dyn", r.id)) == 1


def test_arrivals_are_ordered_and_inside_the_window(hour):
    times = [r.arrival_s for r in hour]
    assert times == sorted(times) and 0 <= times[0] and times[-1] < 3600
    assert [r.id for r in hour] == list(range(len(hour)))


def test_sessions_arrive_as_a_poisson_process_at_the_set_rate(hour):
    starts = sorted(s[0].arrival_s for s in sessions_of(hour).values())
    assert len(starts) / 3600 == pytest.approx(2.0, rel=0.04)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert statistics.mean(gaps) == pytest.approx(0.5, rel=0.04)
    assert statistics.stdev(gaps) / statistics.mean(gaps) == pytest.approx(1.0, abs=0.05)  # exponential: CV 1
    per_minute = Counter(int(t // 60) for t in starts)
    assert statistics.variance(per_minute.values()) / statistics.mean(per_minute.values()) == pytest.approx(1.0, abs=0.3)


def test_turns_average_four_and_are_spaced_two_to_ten_seconds(hour):
    full = [s for s in sessions_of(hour).values() if s[0].arrival_s < 3000]  # not cut by the window's end
    turns = [len(s) for s in full]
    assert min(turns) == 1
    assert statistics.mean(turns) == pytest.approx(4.0, rel=0.06)
    gaps = [b.arrival_s - a.arrival_s for s in full for a, b in zip(s, s[1:])]
    assert 2.0 <= min(gaps) and max(gaps) <= 10.0
    assert statistics.mean(gaps) == pytest.approx(6.0, rel=0.03)


def test_turn_and_answer_lengths(hour):
    users = [r.user_tokens for r in hour]
    answers = [r.answer_tokens for r in hour]
    assert min(users) == 40 and max(users) == 240
    assert statistics.mean(users) == pytest.approx(140, rel=0.03)
    assert statistics.mean(answers) == pytest.approx(220, rel=0.03)


def test_system_prompts_follow_a_zipf_skew_over_six(hour):
    firsts = [s[0].system_prompt for s in sessions_of(hour).values()]
    counts = Counter(firsts)
    assert set(counts) == set(range(6))
    weights = [1 / k for k in range(1, 7)]
    for prompt in range(6):
        expected = weights[prompt] / sum(weights)
        assert counts[prompt] / len(firsts) == pytest.approx(expected, abs=0.02)
    assert all(len({r.system_prompt for r in s}) == 1 for s in sessions_of(hour).values())


def test_a_surge_draws_from_forty_prompts_only_while_it_lasts():
    reqs = generate(long_run(events="surge@600+1200"))
    starts = {s[0].session: s[0] for s in sessions_of(reqs).values()}
    during = {r.system_prompt for r in starts.values() if 600 <= r.arrival_s < 1800}
    outside = {r.system_prompt for r in starts.values() if not 600 <= r.arrival_s < 1800}
    assert len(during) > 30 and max(during) < 40
    assert outside == set(range(6))


def test_a_burst_multiplies_the_arrival_rate_for_its_duration():
    reqs = generate(long_run(events="burst@1000+600x4"))
    starts = [s[0].arrival_s for s in sessions_of(reqs).values()]
    inside = sum(1000 <= t < 1600 for t in starts) / 600
    before = sum(t < 1000 for t in starts) / 1000
    assert before == pytest.approx(2.0, rel=0.1)
    assert inside == pytest.approx(8.0, rel=0.08)


def test_a_burst_does_not_change_what_sessions_say():
    plain = sessions_of(generate(Scenario()))
    burst = sessions_of(generate(Scenario().with_text({"events": "burst@150+60x3"})))
    for sid in range(50):
        a, b = plain[sid], burst[sid]
        n = min(len(a), len(b))
        assert [(r.system_prompt, r.user_tokens, r.answer_tokens) for r in a[:n]] == \
               [(r.system_prompt, r.user_tokens, r.answer_tokens) for r in b[:n]]


def digest(requests):
    text = json.dumps([[r.arrival_s, r.session, r.turn, r.system_prompt, r.keys, r.sizes, r.answer_tokens]
                       for r in requests])
    return hashlib.sha256(text.encode()).hexdigest()


def test_only_the_seed_and_traffic_settings_change_the_stream():
    base = digest(generate(Scenario()))
    for change in ({"router.kind": "cache_aware"}, {"fleet.replicas": "9"}, {"fleet.cache": "false"},
                   {"fleet.memory_gb": "1"}, {"router.spill_threshold_s": "off"}):
        assert digest(generate(Scenario().with_text(change))) == base, change
    assert digest(generate(Scenario().with_text({"seed": "2"}))) != base


def test_a_limit_stops_generation_by_counting_not_estimating():
    # Eight overlapping doublings multiply the rate by 256: an estimate that adds factors is off by ~30x.
    bursts = ",".join(["burst@0+179x2"] * 8)
    scenario = Scenario().with_text({"events": bursts})
    with pytest.raises(TooManyRequests) as info:
        generate(scenario, limit=40_000)
    assert info.value.limit == 40_000
    plain = generate(Scenario())
    assert generate(Scenario(), limit=len(plain)) == plain  # at the limit exactly: everything, unchanged
    with pytest.raises(TooManyRequests):
        generate(Scenario(), limit=len(plain) - 1)


def test_a_limit_bounds_the_work_of_a_runaway_setup():
    # 24 overlapping x1.5 bursts: about 6 million sessions, which once ran out of memory. With a limit
    # the draw stops after limit + 1 sessions, so this returns at once.
    scenario = Scenario().with_text({"events": ",".join(["burst@0+179x1.5"] * 24)})
    with pytest.raises(TooManyRequests):
        simulate(scenario, limit=40_000)
