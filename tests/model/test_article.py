"""The article's arithmetic, each number computed through the model's own functions from the preset.

"The Cheapest GPU Is the One That Already Knows You" (seeds/article-cheapest-gpu.txt): every figure it
states that the explainers reproduce is pinned here, with the article's rounding as the tolerance, and
each test also moves an input to show the figure is computed, not written in.
"""

import json

import pytest
from helpers import request

from lab.cli.main import main
from model import (
    Scenario,
    api_calls,
    crossover,
    crossover_of,
    explainer_profile,
    idle_ttft_s,
    money_of,
    simulate,
    transfer_of,
    warm_ttft_s,
)
from model.engines.replica import Replica
from model.gpus.hardware import build
from model.routing.policies.cache_aware import CacheAware
from model.routing.policies.cost import Cost
from model.routing.view import View
from model.studies.explainers import (
    HOURS_PER_MONTH,
    Prices,
    api_bill,
    api_fanout,
    fetch_plan,
    gpu_usd_per_month,
    prices_of,
    transfer,
)

ARTICLE = build("article_14b_h100")
DEFAULT = Scenario()


def cli_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# -- 1. the crossover ----------------------------------------------------------------------

def test_recomputing_30000_tokens_takes_2_12_s_and_900_take_64_ms_thirty_three_to_one():
    x = crossover(ARTICLE, 30_000, 900, 3, 8_000)
    assert x.idle_ttft_s == pytest.approx(2.12, abs=0.005)  # "about 2.1 seconds", "the idle GPU's 2.12"
    assert x.warm_prefill_s == pytest.approx(0.064, abs=0.0005)  # "64 milliseconds"
    assert round(x.idle_ttft_s / x.warm_prefill_s) == 33  # "Thirty-three to one"
    assert x.cached_fraction == pytest.approx(0.97)  # "Agents ... live at 97"


def test_three_queued_8k_requests_wait_1_7_s_and_the_warm_gpu_still_wins_at_1_76_s():
    x = crossover(ARTICLE, 30_000, 900, 3, 8_000)
    assert x.queue_s == pytest.approx(1.7, abs=0.005)  # "1.7 seconds of waiting"
    assert x.warm_ttft_s == pytest.approx(1.76, abs=0.005)  # "Total: 1.76 seconds against the idle GPU's 2.12"
    assert x.winner == "warm"


def test_at_four_queued_the_warm_gpu_takes_2_33_s_and_the_idle_one_wins():
    x = crossover(ARTICLE, 30_000, 900, 4, 8_000)
    assert x.warm_ttft_s == pytest.approx(2.33, abs=0.005)  # "the warm GPU takes 2.33 seconds"
    assert x.winner == "idle"
    assert crossover(ARTICLE, 30_000, 900, 3, 8_000).flips_at_queued == 4  # "Push the queue slider to four"


def test_at_three_queued_the_warm_gpu_needs_more_than_80_percent_cached_and_loses_at_70():
    x = crossover(ARTICLE, 30_000, 900, 3, 8_000)
    assert x.breakeven_cached_fraction == pytest.approx(0.8, abs=1e-9)  # "more than 80 per cent"
    assert crossover(ARTICLE, 30_000, 5_700, 3, 8_000).winner == "warm"  # 81% cached
    assert crossover(ARTICLE, 30_000, 9_000, 3, 8_000).winner == "idle"  # "Drop the sharing to 70"


def test_the_crossover_moves_with_every_input():
    base = crossover(ARTICLE, 30_000, 900, 3, 8_000)
    assert crossover(ARTICLE, 30_000, 900, 3, 4_000).breakeven_cached_fraction == pytest.approx(0.4)
    assert crossover(ARTICLE, 60_000, 900, 3, 8_000).breakeven_cached_fraction == pytest.approx(0.4)
    assert crossover(ARTICLE, 60_000, 900, 3, 8_000).flips_at_queued == 8
    faster = build("article_14b_h100", {"utilisation": 0.8})
    assert crossover(faster, 30_000, 900, 3, 8_000).idle_ttft_s == pytest.approx(base.idle_ttft_s / 2)
    assert crossover(ARTICLE, 30_000, 900, 0, 8_000).warm_ttft_s == base.warm_prefill_s
    assert crossover(ARTICLE, 30_000, 30_000, 0, 8_000).flips_at_queued == 0  # holding nothing: no better than idle
    assert crossover(ARTICLE, 30_000, 900, 3, 0).flips_at_queued is None  # empty requests never flip it
    assert warm_ttft_s(ARTICLE, 900, 3, 8_000) == base.warm_ttft_s and idle_ttft_s(ARTICLE, 30_000) == base.idle_ttft_s


def test_crossover_command_defaults_to_the_articles_case_on_the_articles_preset(capsys):
    x = cli_json(capsys, "crossover")
    assert (x["idle_ttft_s"], x["warm_ttft_s"], x["breakeven_cached_fraction"]) == (2.123357, 1.762386, 0.8)
    assert x["hardware"] == "article_14b_h100" and "lab preset has no FLOP figures" in x["notes"][0]
    four = cli_json(capsys, "crossover", "--set", "crossover.queued=4")
    assert four["warm_ttft_s"] == 2.328615 and four["winner"] == "idle"
    h200 = cli_json(capsys, "crossover", "--set", "hardware.preset=article_14b_h200", "--set", "hardware.tflops=1978")
    assert h200["notes"] == [] and h200["idle_ttft_s"] == pytest.approx(x["idle_ttft_s"] / 2, abs=2e-6)
    assert main(["crossover"]) == 0 and "needs more than 80.0% cached" in capsys.readouterr().out


def test_the_explainers_keys_are_listed_with_the_articles_defaults(capsys):
    rows = {r["key"]: r for r in cli_json(capsys, "keys")}
    assert {k: rows[f"crossover.{k}"]["default"] for k in ("prompt_tokens", "new_tokens", "queued", "queued_tokens")} \
        == {"prompt_tokens": "30000", "new_tokens": "900", "queued": "3", "queued_tokens": "8000"}
    assert rows["transfer.cached_tokens"]["default"] == "29000" and rows["transfer.rdma_gbps"]["default"] == "800"
    assert rows["money.read_multiple"]["default"] == "0.1" and rows["money.lifetime_s"]["default"] == "300"
    assert rows["traffic.kind"]["allowed"] == "chat | agent | closed" and rows["fleet.fetch"]["allowed"] == "off | rdma | nvme | host"


# -- 2. moving the cache instead ---------------------------------------------------------------

def test_a_29000_token_prefix_is_4_8_gb_moved_in_48_ms_over_rdma_and_680_ms_from_nvme():
    t = transfer_of(DEFAULT)
    assert t["kv_bytes_per_token"] == 160 * 1024  # "160 KiB a token"
    assert t["kv_bytes"] / 1e9 == pytest.approx(4.8, abs=0.05)  # "4.8 GB of KV cache"
    assert t["rdma_s"] == pytest.approx(0.048, abs=0.0005)  # "about 48 milliseconds"
    assert t["nvme_s"] == pytest.approx(0.68, abs=0.005)  # "about 680 milliseconds"
    assert round(t["prompt_recompute_s"] * 1000) == 2123  # "Recompute is 2,123"
    assert round(t["prompt_recompute_s"] / t["nvme_s"]) == 3  # "three times faster to pull ... off a disk"
    full = transfer_of(DEFAULT.with_text({"hardware.utilisation": "1"}))
    assert round(full["prompt_recompute_s"] * 1000) == 849  # "at ... 100 per cent utilisation ... 849 milliseconds"
    assert full["nvme_s"] < full["prompt_recompute_s"]  # "and the disk still wins"


def test_the_lab_compares_like_with_like_where_the_article_slips():
    t = transfer(ARTICLE, 30_000, 29_000, {"rdma": 100e9})
    assert t["recompute_s"] == pytest.approx(29_000 * 28e9 / (989e12 * 0.4))  # the same 29,000 tokens: 2.05 s
    assert round(t["recompute_s"] * 1000) == 2053
    assert t["rdma_ttft_s"] == pytest.approx(t["rdma_s"] + ARTICLE.prefill_s(1_000))  # fetch, then the 1,000 left
    assert t["breakeven_link_bytes_per_s"] / 1e9 == pytest.approx(2.31, abs=0.005)


def test_transfer_moves_with_its_inputs(capsys):
    t = cli_json(capsys, "transfer", "--set", "transfer.rdma_gbps=400", "--set", "transfer.cached_tokens=14500")
    assert t["rdma_s"] == transfer_of(DEFAULT)["rdma_s"]  # half the bytes over half the link: the same time
    assert t["nvme_s"] == pytest.approx(0.68 / 2, abs=0.003)
    assert t["host_s"] == pytest.approx(14_500 * 163_840 / 64e9, abs=1e-6)
    gqa64 = transfer_of(DEFAULT.with_text({"hardware.kv_heads": "64"}))
    assert gqa64["kv_bytes_per_token"] / 1e6 == pytest.approx(1.3, abs=0.05)  # "at 64 key-value heads ... 1.3 MB"
    assert main(["transfer"]) == 0 and "GB/s beats recomputing" in capsys.readouterr().out


def test_fetching_pays_only_on_a_link_faster_than_recompute():
    assert fetch_plan(ARTICLE, 29_000, 100e9) == (29_000, pytest.approx(29_000 * 163_840 / 100e9))
    assert fetch_plan(ARTICLE, 29_000, 2e9) == (0, 0.0)  # below 2.31 GB/s: recompute
    assert fetch_plan(ARTICLE, 0, 100e9) == (0, 0.0) and fetch_plan(ARTICLE, 500, None) == (0, 0.0)


# -- the idle/warm choice and the fetch tiers, in the simulation's routers ----------------------

def two_gpus(queued, warm_tokens=29_100, prompt=30_000):
    """GPU 0 holds `warm_tokens` of the prompt and has `queued` requests of 8,000 uncached tokens; GPU 1 is idle."""
    reps = [Replica(i, 1_000_000, True, ARTICLE.overhead_s, ARTICLE.prefill_tokens_per_s()) for i in range(2)]
    reps[0].tree.insert(("run17",), (warm_tokens,))
    for i in range(queued):
        reps[0].enqueue(request(100 + i, [("other", i)], [8_000]))
    return reps, request(17, ["run17", "step17"], [warm_tokens, prompt - warm_tokens])


def article_scenario(**text):
    return Scenario().with_text({"hardware.preset": "article_14b_h100", **{k.replace("__", "."): v for k, v in text.items()}})


def test_the_seeds_cache_aware_rule_sends_the_three_queued_case_to_the_idle_gpu_and_cost_does_not():
    reps, req = two_gpus(3)
    view = View(req, reps, 0.0)
    x = crossover(ARTICLE, 30_000, 900, 3, 8_000)
    assert view.backlog(0) == pytest.approx(x.queue_s)
    assert CacheAware(article_scenario()).choose(view) == 1  # 1.7 s of backlog > its 1 s threshold: the wrong choice
    cost = Cost(article_scenario(router__kind="cost"))
    assert cost.estimate(view, 0) == pytest.approx(x.warm_ttft_s, rel=1e-12)
    assert cost.estimate(view, 1) == pytest.approx(x.idle_ttft_s, rel=1e-12)
    assert cost.choose(view) == 0 and x.winner == "warm"


def test_at_four_queued_cost_and_the_crossover_both_take_the_idle_gpu():
    reps, req = two_gpus(4)
    view = View(req, reps, 0.0)
    x = crossover(ARTICLE, 30_000, 900, 4, 8_000)
    cost = Cost(article_scenario(router__kind="cost"))
    assert cost.estimate(view, 0) == pytest.approx(x.warm_ttft_s, rel=1e-12)
    assert cost.choose(view) == 1 and x.winner == "idle"


@pytest.mark.parametrize("queued, tier, expected", [(3, "rdma", 1), (3, "nvme", 1), (1, "rdma", 1), (1, "nvme", 0),
                                                    (1, "host", 1)])
def test_the_fetch_tiers_agree_between_the_transfer_figure_and_the_cost_router(queued, tier, expected):
    reps, req = two_gpus(queued)
    view = View(req, reps, 0.0)
    s = article_scenario(router__kind="cost", fleet__fetch=tier)
    figures = transfer_of(s.with_text({"transfer.prompt_tokens": "30000", "transfer.cached_tokens": "29100"}))
    warm = crossover(ARTICLE, 30_000, 900, queued, 8_000).warm_ttft_s
    cost = Cost(s)
    assert cost.estimate(view, 1) == pytest.approx(figures[f"{tier}_ttft_s"], abs=1e-6)  # fetch + the 900 left
    assert cost.estimate(view, 0) == pytest.approx(warm, rel=1e-12)  # nothing to fetch: the peer holds no more
    assert cost.choose(view) == expected == (0 if warm < figures[f"{tier}_ttft_s"] else 1)


def test_a_replica_fetches_what_a_peer_holds_and_then_holds_it_itself():
    s = article_scenario(fleet__replicas="2", fleet__memory_gb="64", duration_s="60")
    first = request(0, ["run17", "a"], [29_100, 900], arrival_s=0.0)
    second = request(1, ["run17", "b"], [29_100, 900], arrival_s=10.0)
    third = request(2, ["run17", "c"], [29_100, 900], arrival_s=20.0)
    force = {0: 0, 1: 1, 2: 1}
    off = simulate(s, [first, second, third], force=force)
    on = simulate(s.with_text({"fleet.fetch": "rdma"}), [first, second, third], force=force)
    assert off.records[1].ttft_ms == pytest.approx(ARTICLE.prefill_s(30_000) * 1000, abs=0.001)
    assert off.records[1].recomputed_tokens == 29_100 and off.fetched_tokens == 0
    fetch_s = 29_100 * 163_840 / 100e9
    assert on.fetched_tokens == 29_100 and on.fetch_s == pytest.approx(fetch_s, abs=1e-6)
    assert on.records[1].ttft_ms == pytest.approx((fetch_s + ARTICLE.prefill_s(900)) * 1000, abs=0.002)
    assert on.records[1].recomputed_tokens == 0 and on.records[1].cached_tokens == 0  # fetched, not a local hit
    assert on.records[2].cached_tokens == 29_100  # the fetched prefix stayed: hot prefixes replicate
    assert on.recompute_gpu_s == 0.0 < off.recompute_gpu_s


def test_fetching_is_lab_mode_only_and_serving_mode_says_so():
    s = Scenario().with_text({"fleet.decode": "true", "fleet.fetch": "rdma", "duration_s": "20"})
    result = simulate(s)
    assert result.fetched_tokens == 0 and any("lab mode only" in note for note in result.notes)


# -- 4. what it costs ----------------------------------------------------------------------------

def test_cache_reads_at_a_tenth_and_writes_at_1_25_of_2_dollars_a_million():
    prices = prices_of(DEFAULT.money)
    assert prices.usd(1_000_000, 0, 0) == 2.0  # "$2 per million input tokens"
    assert prices.usd(0, 1_000_000, 0) == pytest.approx(0.20)  # "against $0.20 for a hit"
    assert prices.usd(0, 0, 1_000_000) == pytest.approx(2.50)  # writes at 1.25 times


def test_caching_pays_from_the_second_call_and_a_gap_past_five_minutes_throws_it_away():
    prices = prices_of(DEFAULT.money)
    warm = api_calls(prices, 20, 30_000, 900, 4.0)
    assert warm["entry_alive"] and warm["pays_from_call"] == 2
    assert warm["later_call_usd"] == pytest.approx((29_100 * 0.1 + 900 * 1.25) * 2 / 1e6)
    cold = api_calls(prices, 20, 30_000, 900, 301.0)  # "an agent that pauses for a slow tool call"
    assert not cold["entry_alive"] and cold["pays_from_call"] is None
    assert cold["cached_usd"] == pytest.approx(1.25 * cold["uncached_usd"])  # every call writes again
    assert api_calls(prices._replace(lifetime_s=3600.0), 20, 30_000, 900, 301.0)["entry_alive"]


def test_a_fan_out_of_ten_costs_ten_writes_at_once_and_one_write_nine_reads_in_series():
    prices = prices_of(DEFAULT.money)
    race, fix = api_fanout(prices, 10, 30_000, False), api_fanout(prices, 10, 30_000, True)
    assert race == pytest.approx(prices.usd(0, 0, 10 * 30_000))
    assert fix == pytest.approx(prices.usd(0, 9 * 30_000, 30_000))
    assert race / fix == pytest.approx(12.5 / 2.15)  # 5.8 times: "ten times cheaper" rounds the reads' tenth


def test_gpu_seconds_become_dollars_a_month_at_the_runs_rate(capsys):
    assert gpu_usd_per_month(3600.0, 3600.0, 3.0) == HOURS_PER_MONTH * 3.0  # one GPU busy all month
    assert gpu_usd_per_month(90.0, 180.0, 2.0) == pytest.approx(0.5 * 730 * 2.0)
    m = cli_json(capsys, "money", "--set", "duration_s=30", "--set", "money.gpu_usd_per_hour=6")
    run = m["run"]
    assert m["gpu"]["prefill_usd_per_month"] == pytest.approx(run["prefill_gpu_s"] / 30 * 730 * 6, abs=1e-5)
    assert m["gpu"]["recompute_usd_per_month"] == pytest.approx(run["recompute_gpu_s"] / 30 * 730 * 6, abs=1e-5)
    assert m["api_bill"]["read_tokens"] + m["api_bill"]["written_tokens"] == m["api_bill"]["prompt_tokens"]
    assert main(["money", "--set", "duration_s=30"]) == 0 and "caching pays from call 2" in capsys.readouterr().out


def test_the_api_bill_reads_only_live_entries_written_before_the_call():
    prices = Prices(2.0, 0.1, 1.25, 300.0)
    a = request(0, ["sys", "a"], [1000, 100], arrival_s=0.0)
    b = request(1, ["sys", "b"], [1000, 100], arrival_s=0.5)  # before a's first token: the race
    c = request(2, ["sys", "c"], [1000, 100], arrival_s=10.0)
    d = request(3, ["sys", "d"], [1000, 100], arrival_s=400.0)  # the entry expired at 310 s
    bill = api_bill([(a, 1.0), (b, 1.5), (c, 10.5), (d, 400.5)], prices)
    assert bill["read_tokens"] == 1000 and bill["written_tokens"] == 4 * 1100 - 1000


def test_the_explainers_profile_is_the_scenarios_unless_it_is_the_lab_preset():
    assert explainer_profile(DEFAULT)[0].preset == "article_14b_h100"
    profile, notes = explainer_profile(DEFAULT.with_text({"hardware.preset": "llama8b_a100"}))
    assert profile.preset == "llama8b_a100" and notes == ()
    # a measured preset: the idle GPU's prefill is one measured pass of the prompt (issue 27), not 40% of peak
    assert crossover_of(DEFAULT.with_text({"hardware.preset": "llama8b_a100"}))["idle_ttft_s"] == pytest.approx(
        build("llama8b_a100").prefill_s(30_000), abs=1e-6)


@pytest.mark.parametrize("router, fetch, chosen, ttft_s", [
    ("cache_aware", "off", 1, crossover(ARTICLE, 30_000, 900, 3, 8_000).idle_ttft_s),
    ("cost", "off", 0, crossover(ARTICLE, 30_000, 900, 3, 8_000).warm_ttft_s),
    ("cost", "rdma", 1, transfer(ARTICLE, 30_000, 29_100, {"rdma": 100e9})["rdma_ttft_s"]),
    ("cost", "nvme", 1, transfer(ARTICLE, 30_000, 29_100, {"nvme": 7e9})["nvme_ttft_s"]),
])
def test_the_simulation_routes_the_articles_request_as_the_figures_say(router, fetch, chosen, ttft_s):
    """Run 17's call lands at 10 s, when GPU 0 holds its prefix and three 8k requests; GPU 1 is idle."""
    s = article_scenario(router__kind=router, fleet__fetch=fetch, fleet__replicas="2", fleet__memory_gb="64",
                         duration_s="60")
    earlier = request(0, ["run17", "step16"], [29_100, 900], arrival_s=0.0)
    queue = [request(1 + i, [("other", i)], [8_000], arrival_s=10.0) for i in range(3)]
    call = request(4, ["run17", "step17"], [29_100, 900], arrival_s=10.0)
    result = simulate(s, [earlier, *queue, call], force={0: 0, 1: 0, 2: 0, 3: 0})
    assert result.records[4].replica == chosen
    assert result.records[4].ttft_ms == pytest.approx(ttft_s * 1000, abs=0.002)


def test_caching_pays_at_once_when_writes_cost_no_more_than_plain_input():
    prices = Prices(2.0, 0.1, 0.0, 300.0)
    assert api_calls(prices, 5, 30_000, 900, 4.0)["pays_from_call"] == 1
    assert api_calls(prices._replace(write_multiple=2.0), 5, 30_000, 900, 4.0)["pays_from_call"] == 3
    dear = prices._replace(write_multiple=2.0, read_multiple=0.9)
    first, later, plain = dear.usd(0, 0, 30_000), dear.usd(0, 29_100, 900), dear.usd(30_000, 0, 0)
    brute = next(k for k in range(1, 1000) if k * plain > first + (k - 1) * later)
    assert api_calls(dear, 5, 30_000, 900, 4.0)["pays_from_call"] == brute == 16


def test_money_of_a_result_is_cheap_for_the_page_and_needs_no_second_run():
    result = simulate(DEFAULT.with_text({"duration_s": "30"}))
    m = money_of(result.scenario, result.prefill_gpu_s, result.recompute_gpu_s)
    assert m["gpu"]["prefill_usd_per_month"] == round(gpu_usd_per_month(result.prefill_gpu_s, 30.0, 3.0), 6)
    assert "api_bill" not in m and m["api_fanout"]["ratio"] == pytest.approx(12.5 / 2.15, abs=1e-6)
