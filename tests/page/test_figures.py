"""The page's figures: each drawn from the model's own functions, the article's ones without re-running the fleet,
and an embed showing exactly the figures and controls its URL names."""

import pytest
from helpers import ROOT

import lab.page.view as view
from lab.page.controls import CONTROLS
from lab.page.figures import ARTICLE_FIGURES, FIGURES, Context, fleet_key
from lab.page.store import STORE
from model import (
    RACE,
    Scenario,
    crossover,
    explainer_profile,
    fanout_race,
    money_of,
    simulate,
    simulate_with_trees,
    transfer_of,
)


def context(scenario: Scenario) -> Context:
    return Context(scenario, view.run(scenario), view.run)


def data(name: str, scenario: Scenario) -> dict:
    return FIGURES[name].data(context(scenario))


def caption(name: str, scenario: Scenario) -> str:
    return FIGURES[name].caption(context(scenario))


def test_the_crossover_figure_draws_the_articles_case_and_its_curves_cross_at_the_breakeven():
    s = Scenario()
    curves = data("crossover", s)["src:crossover"]["data"]
    profile, _ = explainer_profile(s)
    x = crossover(profile, 30_000, 900, 3, 8000)
    even = data("crossover", s)["src:crossover_even"]["data"]["x"][0]
    assert even == pytest.approx(x.breakeven_cached_fraction * 100, abs=1e-3) == pytest.approx(80)
    # below the breakeven the warm GPU is slower than the idle one, above it faster
    for share, idle, warm in zip(curves["cached"], curves["idle"], curves["warm"]):
        if share != pytest.approx(even):
            assert (warm > idle) == (share < even), share
    text = caption("crossover", s)
    assert "2.12 s" in text and "1.76 s" in text and "80%" in text and "the warm GPU is faster" in text


def test_the_crossover_figure_follows_its_inputs_and_says_when_the_idle_gpu_wins():
    four = Scenario().with_text({"crossover.queued": "4"})
    assert "2.33 s" in caption("crossover", four) and "the idle GPU is faster" in caption("crossover", four)
    assert data("crossover", four)["src:crossover_even"]["data"]["x"] == []  # past 100%: no line to draw
    smaller = Scenario().with_text({"hardware.preset": "llama8b_h100"})  # fewer FLOPs a token: everything faster
    assert max(data("crossover", smaller)["src:crossover"]["data"]["idle"]) < 2


def test_the_transfer_figure_is_the_models_transfer_over_every_tier():
    s = Scenario()
    t = transfer_of(s)
    columns = data("transfer", s)["src:transfer"]["data"]
    moved = dict(zip(columns["route"], columns["moved"]))
    assert moved["RDMA 800 Gbps"] == pytest.approx(t["rdma_s"], abs=1e-6) == pytest.approx(0.048, abs=5e-4)
    assert moved["NVMe 7 GB/s"] == pytest.approx(t["nvme_s"], abs=1e-6) == pytest.approx(0.68, abs=5e-3)
    assert columns["ttft"][0] == pytest.approx(t["prompt_recompute_s"], abs=1e-6)
    assert "4.8 GB" in caption("transfer", s)
    slower = data("transfer", s.with_text({"transfer.rdma_gbps": "100"}))["src:transfer"]["data"]
    assert dict(zip(slower["route"], slower["moved"]))["RDMA 100 Gbps"] == pytest.approx(8 * t["rdma_s"], rel=1e-4)


def test_the_api_figure_shows_caching_paying_and_a_gap_past_the_lifetime_costing_more():
    bill = data("api", Scenario())["src:api"]["data"]
    assert bill["cached"][0] > bill["plain"][0] and bill["cached"][-1] < bill["plain"][-1]  # a write, then reads
    late = Scenario().with_text({"money.gap_s": "400"})
    bill = data("api", late)["src:api"]["data"]
    assert all(c > p for c, p in zip(bill["cached"], bill["plain"]))
    assert "outlives the cache's 300 s" in caption("api", late)


def test_the_gpu_figure_prices_the_fleets_run():
    s = Scenario()
    gpu = money_of(s, simulate(s).prefill_gpu_s, simulate(s).recompute_gpu_s)["gpu"]
    assert data("gpu", s)["src:gpu"]["data"]["usd"] == [round(gpu["fleet_usd_per_month"], 2),
                                                        round(gpu["prefill_usd_per_month"], 2),
                                                        round(gpu["recompute_usd_per_month"], 2)]
    twice = data("gpu", s.with_text({"money.gpu_usd_per_hour": "6"}))["src:gpu"]["data"]["usd"]
    assert twice == pytest.approx([2 * v for v in data("gpu", s)["src:gpu"]["data"]["usd"]], abs=0.02)


def test_the_fanout_figure_is_the_models_race_and_is_empty_without_fanouts():
    race = Scenario().with_text(dict(RACE))
    columns = data("fanout", race)["src:fanout"]["data"]
    model = fanout_race(race)
    assert columns["computed"] == [model["race"]["computed"], model["warm_first"]["computed"]]
    assert columns["read"] == [model["race"]["read"], model["warm_first"]["read"]]
    assert columns["computed"][1] < columns["computed"][0]  # warming first is the fix
    assert data("fanout", Scenario())["src:fanout"]["data"]["way"] == []
    assert "sends no fan-outs" in caption("fanout", Scenario())


def request(hash_: str = "", **extra) -> dict:
    return {"hash": hash_, "controls": None, "action": None, "progress": {}, "memo": None, **extra}


def test_moving_an_article_slider_reuses_the_fleets_run_and_a_fleet_control_runs_it(monkeypatch):
    STORE.runs.clear()
    runs = []
    monkeypatch.setattr(view, "simulate_with_trees", lambda s, limit=None, requests=None: runs.append(s) or simulate_with_trees(s, limit=limit, requests=requests))
    first = view.handle(request())
    assert len(runs) == 1
    moved = view.handle(request(first["hash"], controls={"ctl:crossover.queued": 5}))
    assert len(runs) == 1, "a crossover slider re-ran the fleet"
    assert moved["patches"]["bokeh"]["src:crossover_now"] != first["patches"]["bokeh"]["src:crossover_now"]
    assert moved["summary"] == first["summary"]
    view.handle(request(moved["hash"], controls={"ctl:money.gpu_usd_per_hour": 5}))
    view.handle(request(moved["hash"], controls={"ctl:transfer.rdma_gbps": 400}))
    assert len(runs) == 1
    view.handle(request(moved["hash"], controls={"ctl:fleet.replicas": 6}))
    assert len(runs) == 2
    view.handle(request(moved["hash"]))  # back where it was: remembered
    assert len(runs) == 2


def test_a_link_speed_is_a_fleet_key_when_replicas_fetch_over_that_link():
    fetching = Scenario().with_text({"fleet.fetch": "rdma"})
    assert fleet_key(fetching) != fleet_key(fetching.with_text({"transfer.rdma_gbps": "100"}))
    assert fleet_key(fetching) == fleet_key(fetching.with_text({"transfer.cached_tokens": "100",
                                                                "crossover.queued": "7", "money.calls": "3"}))


def test_an_embed_shows_the_figures_and_controls_its_url_names():
    answer = view.handle(request(embed={"figure": "crossover"}))
    dom, bokeh = answer["patches"]["dom"], answer["patches"]["bokeh"]
    assert dom['[data-figure="crossover"]'] == {"hidden": False}
    assert all(dom[f'[data-figure="{name}"]']["hidden"] for name in FIGURES if name != "crossover")
    assert dom['[data-figure="headline"]']["hidden"]
    assert "src:fanout" not in bokeh and "src:ttft" not in bokeh  # figures not shown are not computed
    shown = {c.key for c in CONTROLS if bokeh[c.box_name]["visible"]}
    assert shown == set(FIGURES["crossover"].controls)
    named = view.handle(request(embed={"figure": "headline,hit", "controls": "router.kind,fleet.replicas"}))
    shown = {c.key for c in CONTROLS if named["patches"]["bokeh"][c.box_name]["visible"]}
    assert shown == {"router.kind", "fleet.replicas"}
    assert not named["patches"]["dom"]['[data-figure="hit"]']["hidden"]


def test_an_embed_names_what_it_does_not_know_and_falls_back():
    answer = view.handle(request(embed={"figure": "crossover,<b>pie</b>", "controls": "fleet.replicas,nope"}))
    notices = " ".join(answer["notices"])
    assert "'<b>pie</b>'" in notices and "'nope'" in notices and "crossover" in notices
    bare = view.handle(request(embed={}))
    assert not bare["patches"]["dom"]['[data-figure="ttft"]']["hidden"]
    assert not bare["patches"]["dom"]['[data-figure="headline"]']["hidden"]
    assert bare["patches"]["dom"]['[data-figure="crossover"]']["hidden"]
    assert "[data-figure=\"ttft\"]" not in view.handle(request())["patches"]["dom"]  # the full page hides nothing


def test_the_fanout_example_loads_the_articles_race_but_not_inside_a_mission():
    answer = view.handle(request(action={"type": "example", "figure": "fanout"}))
    assert Scenario().with_text(dict(RACE)) == view.read_state({"hash": answer["hash"]}).scenario
    assert answer["patches"]["dom"]["#try-fanout"]["hidden"]  # loaded: nothing more to offer
    assert not view.handle(request())["patches"]["dom"]["#try-fanout"]["hidden"]
    refused = view.handle(request("mission=cache-on", action={"type": "example", "figure": "fanout"}))
    assert "leave the mission" in " ".join(refused["notices"])
    assert "traffic.kind" not in refused["hash"]


def test_every_article_figure_declares_controls_the_page_has():
    keys = {c.key for c in CONTROLS}
    for fig in ARTICLE_FIGURES:
        assert (fig.controls or fig.constant) and set(fig.controls) <= keys, fig.name
        beside = {c.key for c in CONTROLS if c.figure == fig.name}
        assert beside <= set(fig.controls), fig.name


def test_the_load_strip_is_each_replicas_busy_share_per_bin_and_the_table_is_the_cli_table():
    s = Scenario().with_text({"fleet.replicas": "6", "router.kind": "cache_aware"})
    result = view.run(s)
    columns = data("load", s)["src:load"]["data"]
    bins = len(result.series.start_s)
    assert len(columns["busy"]) == 6 * bins
    for i, row in enumerate(result.series.replica_load):
        assert columns["busy"][i * bins:(i + 1) * bins] == [round(min(v, 1.0) * 100, 1) for v in row]
        assert set(columns["replica"][i * bins:(i + 1) * bins]) == {f"replica {i}"}
    assert data("load", s)["yr:load"]["factors"] == [f"replica {i}" for i in reversed(range(6))]
    busiest = max(range(6), key=lambda i: sum(result.series.replica_load[i]))
    assert f"replica {busiest} was busy" in caption("load", s)
    table = view.handle({"hash": "fleet.replicas=6&router.kind=cache_aware"})["patches"]["dom"]["#replicas"]["html"]
    key = data("load", s)["src:load_key"]["data"]
    for r in result.replicas:
        colour = key["color"][r.index]
        assert f'<tr><td><span class="swatch" style="background:{colour}"></span>{r.index}</td><td>{r.requests:,}' \
               f"</td><td>{r.hit_rate:.1%}</td>" in table
    assert len(set(key["color"])) == 6 and key["replica"] == [f"replica {i}" for i in range(6)]
    tree = view.handle({"hash": "fleet.replicas=6&router.kind=cache_aware&tree_replica=4"})["patches"]["bokeh"]
    assert tree["fig:tree"]["outline_line_color"] == key["color"][4]  # the tree is framed in its replica's colour


def test_the_memory_chart_shows_pinned_prefixes_and_evictions_per_bin():
    surge = Scenario().with_text({"events": "surge@60+60", "fleet.memory_gb": "1"})
    result = view.run(surge)
    s = result.series
    memory = data("memory", surge)["src:memory"]["data"]
    for b in range(len(s.start_s)):
        assert memory["pinned"][b] == round(sum(row[b] for row in s.kv_pinned_tokens) / 1000, 3)
        assert memory["evicted"][b] == round(sum(row[b] for row in s.evicted_tokens) / 1000, 3)
    assert s.kv_pinned_tokens == s.kv_running_tokens  # lab mode: what running requests hold is what they pin
    first, during = sum(memory["evicted"][:10]), sum(memory["evicted"][12:24])  # 0-50 s, and the surge's 60-120 s
    assert during > 2 * first  # the surge's new prompts push out what the cache held
    said = caption("memory", surge)
    assert f"evicted {sum(map(sum, s.evicted_tokens)):,} tokens in all" in said


def test_the_locality_figure_is_drawn_once_at_build_time_beside_the_notes_figures():
    baked = view.render(Scenario())["patches"]["bokeh"]["src:locality"]["data"]
    assert baked["note"][:2] == [12.5, 97.5] and baked["note"][2:] == [None, None]
    assert baked["lab"][1] > 70 and baked["lab"][0] < 12.5 * 1.6  # cache-aware above 70%; round robin near the note
    assert "src:locality" not in view.handle(request())["patches"]["bokeh"]  # the worker never sends it again
    said = view.render(Scenario())["patches"]["dom"]["#cap-locality"]["text"]
    assert "of requests found their prefix (the note: 12.5%)" in said and "of prompt tokens were cached" in said
    alone = view.handle(request(embed={"figure": "locality"}))
    assert not any(alone["patches"]["bokeh"][c.box_name]["visible"] for c in CONTROLS)  # nothing to set


def test_the_roofline_figure_is_the_models_and_moves_with_the_gpu_without_rerunning_the_fleet(monkeypatch):
    from model import roofline_of
    s = Scenario()
    points = data("roofline", s)["src:roofline_points"]["data"]
    r = roofline_of(s)
    assert points["intensity"] == [r["prefill"]["flops_per_byte"], r["decode"]["flops_per_byte"]]
    assert data("roofline", s)["src:roofline_ridge"]["data"]["x"][0] == pytest.approx(295, abs=1)
    assert "0.34%" in caption("roofline", s)
    a100 = Scenario().with_text({"hardware.preset": "llama8b_a100"})
    assert data("roofline", a100)["src:roofline_ridge"]["data"]["x"][0] == pytest.approx(153, abs=1)
    STORE.runs.clear()
    runs = []
    monkeypatch.setattr(view, "simulate_with_trees", lambda sc, limit=None, requests=None: runs.append(sc) or simulate_with_trees(sc, limit=limit, requests=requests))
    first = view.handle(request())
    moved = view.handle(request(first["hash"], controls={"ctl:roofline.batch": 64}))
    bokeh = moved["patches"]["bokeh"]
    assert len(runs) == 1 and bokeh["src:roofline_points"] != first["patches"]["bokeh"]["src:roofline_points"]


SERVING = Scenario().with_text({"fleet.decode": "true"})


def test_the_join_figure_is_the_models_stall_demo_and_its_token_budget_never_reruns_a_lab_fleet(monkeypatch):
    from model import stall_demo
    demo = stall_demo(Scenario())
    drawn = data("join", Scenario())
    for way in ("alone", "chunked", "prefill_first"):
        assert drawn[f"src:join_{way}"]["data"]["gap"] == demo[way]["gap_ms"]
    assert max(drawn["src:join_chunked"]["data"]["gap"]) < demo["tbt_slo_ms"] * 2 < max(
        drawn["src:join_prefill_first"]["data"]["gap"])  # chunking bounds the stall the prefill-first order shows
    said = caption("join", Scenario())
    assert "30,000-token prompt" in said and f"{demo['prefill_first']['co_stall_ms']:,.0f} ms" in said
    smaller = Scenario().with_text({"fleet.token_budget": "512"})
    assert max(data("join", smaller)["src:join_chunked"]["data"]["gap"]) < max(drawn["src:join_chunked"]["data"]["gap"])
    STORE.runs.clear()
    runs = []
    monkeypatch.setattr(view, "simulate_with_trees", lambda sc, limit=None, requests=None: runs.append(sc) or simulate_with_trees(sc, limit=limit, requests=requests))
    first = view.handle(request())
    moved = view.handle(request(first["hash"], controls={"ctl:fleet.token_budget": 512}))
    assert len(runs) == 1, "the token budget re-ran a lab-mode fleet, which never reads it"
    assert moved["patches"]["bokeh"]["src:join_chunked"] != first["patches"]["bokeh"]["src:join_chunked"]


def test_the_stall_figure_plots_each_answers_longest_and_mean_gap_in_serving_mode_only():
    from model import stall_of
    s = stall_of(view.run(SERVING))
    drawn = data("stall", SERVING)["src:stall"]["data"]
    assert drawn["stall"] == [round(v, 2) for v in s["stall_ms"]] and len(drawn["t"]) == len(s["arrival_s"]) > 100
    assert all(longest >= mean for longest, mean in zip(drawn["stall"], drawn["tpot"]))
    said = caption("stall", SERVING)
    assert f"{s['tbt_slo_met']:.1%} of answers never paused" in said
    assert f"{s['mean_within_slo']:.1%} would have passed" in said and s["mean_within_slo"] > s["tbt_slo_met"]
    assert data("stall", Scenario())["src:stall"]["data"]["t"] == []
    assert "Turn on serving mode" in caption("stall", Scenario())


def test_the_split_figure_is_split_compare_on_the_pages_traffic_and_says_which_target_each_meets():
    from model import split_compare
    d = split_compare(SERVING)
    drawn = data("split", SERVING)
    assert drawn["yr:split"]["factors"] == ["split 1 + 3", "4 co-located"]
    bars = drawn["src:split"]["data"]
    assert bars["ttft"] == [round(d[k]["ttft_slo_met"] * 100, 2) for k in ("colocated", "split")]
    assert bars["tbt"] == [round(d[k]["tbt_slo_met"] * 100, 2) for k in ("colocated", "split")]
    said = caption("split", SERVING)
    assert "Co-located: 100.0% and 42.8%, meeting the TTFT target." in said
    assert "Split 1 + 3: 98.7% and 100.0%, meeting the gap target" in said
    split = SERVING.with_text({"fleet.prefill_replicas": "1", "fleet.decode_replicas": "2"})
    assert "3 co-located" in data("split", split)["yr:split"]["factors"]
    assert "meeting the TTFT target and the gap target" in caption("split", split)
    assert data("split", Scenario())["src:split"]["data"]["setup"] == []


def test_the_queue_figure_runs_both_orders_and_says_when_nothing_waited():
    from model import queue_compare
    burst = SERVING.with_text({"events": "burst@60+30x4"})
    d = queue_compare(burst)
    drawn = data("queue", burst)
    assert drawn["src:queue_fcfs"]["data"]["p99"] == d["fcfs"]["series"]["ttft_p99_ms"]
    assert drawn["src:queue_longest_prefix_first"]["data"]["p99"] == d["longest_prefix_first"]["series"]["ttft_p99_ms"]
    said = caption("queue", burst)
    assert f"longest wait {d['fcfs']['max_queue_ms']:,.0f} ms" in said and "Nothing changed" not in said
    assert "Nothing changed" in caption("queue", SERVING)


def test_the_figures_that_rerun_the_fleet_wait_for_a_slider_to_settle(monkeypatch):
    STORE.runs.clear()
    runs = []
    monkeypatch.setattr(view, "simulate_with_trees", lambda sc, limit=None, requests=None: runs.append(sc) or simulate_with_trees(sc, limit=limit, requests=requests))
    first = view.handle(request("fleet.decode=true"))
    assert len(runs) == 3  # the page's run, then the split and longest prefix first (co-located and fcfs are it)
    live = view.handle(request(first["hash"], controls={"ctl:fleet.replicas": 5}, live=True))
    assert len(runs) == 4 and "src:split" not in live["patches"]["bokeh"] and "#cap-queue" not in live["patches"]["dom"]
    settled = view.handle(request(first["hash"], controls={"ctl:fleet.replicas": 5}))
    assert len(runs) == 6 and settled["patches"]["bokeh"]["src:split"]["data"]["setup"][0] == "5 co-located"


def test_the_serving_figures_offer_serving_mode_and_the_queue_a_burst():
    page = view.handle(request())
    assert "Turn on serving mode" in page["patches"]["dom"]["#try-split"]["html"]
    assert not page["patches"]["dom"]["#try-split"]["hidden"]
    loaded = view.handle(request(page["hash"], action={"type": "example", "figure": "queue"}))
    assert "fleet.decode=true" in loaded["hash"] and "burst" in loaded["hash"]
    assert loaded["patches"]["dom"]["#try-queue"]["hidden"] and loaded["patches"]["dom"]["#try-split"]["hidden"]


def test_the_authors_guide_has_a_snippet_and_a_screenshot_for_every_figure():

    from lab.page.figures import embed_figures
    root = ROOT
    guide = (root / "docs" / "embedding.md").read_text(encoding="utf-8")  # "Embedding in an article"
    for name in embed_figures():
        assert f'src="https://your-site.example/prefix-lab/embed.html?figure={name}"' in guide, name
        assert f"](figures/{name}-720.png)" in guide, name
        assert (root / "docs" / "figures" / f"{name}-720.png").is_file() and \
            (root / "docs" / "figures" / f"{name}-390.png").is_file(), name
