"""The serving and router panels of the page, from a result, in CPython."""

import re

from lab.page.figures.fleetview import explain_html, memory_data, router_html, serving_html, slowest_html
from model import ROUTERS, Scenario, explain, simulate


def scenario(**text):
    return Scenario().with_text({k.replace("__", "."): str(v) for k, v in text.items()})


def test_serving_figures_show_only_in_serving_mode():
    assert serving_html(simulate(Scenario())) == ""
    result = simulate(scenario(fleet__decode="true", duration_s=60))
    text = serving_html(result)
    assert f"p99 {result.tpot_p99_ms:,.1f} ms" in text and f"{result.configured_rps:.2f} configured" in text
    assert "Serving mode on 14B on H100 (the article&#x27;s example)" in text  # its label, not its key (issue 29)


def test_the_memory_split_adds_up_to_every_replicas_tokens_per_bin():
    result = simulate(scenario(fleet__decode="true", duration_s=60, events="burst@20+20x3"))
    data = memory_data(result)
    s = result.series
    for b in (5, 30, 59):
        assert data["running"][b] == round(sum(row[b] for row in s.kv_running_tokens) / 1000, 3)
        assert data["cached"][b] == round(sum(row[b] for row in s.kv_cached_tokens) / 1000, 3)
    assert max(data["running"]) > 0 and len(data["t"]) == len(data["running"]) == 60


def test_the_router_panel_states_the_rule_from_the_class_and_the_error_of_its_memory():
    exact = scenario(router__kind="sglang")
    assert ROUTERS["sglang"].rule in router_html(exact, simulate(exact)) and "memory" not in router_html(
        exact, simulate(exact))
    approx = scenario(router__kind="cache_aware", router__view="approximate", fleet__memory_gb=0.25, duration_s=60)
    result = simulate(approx)
    assert f"{result.router_overestimate:.1%}" in router_html(approx, result)


def test_the_slowest_requests_each_offer_an_explanation():
    result = simulate(scenario(fleet__replicas=2, traffic__session_rate=4, duration_s=60))
    text = slowest_html(result)
    ids = [int(i) for i in re.findall(r'data-request="(\d+)"', text)]
    assert len(ids) == 8 and [result.records[i].ttft_ms for i in ids] == sorted(
        (r.ttft_ms for r in result.records), reverse=True)[:8]


def test_an_explanation_lists_every_replica_and_the_regret():
    s = scenario(router__kind="round_robin", fleet__replicas=3)
    seen = explain(s, 40)
    text = explain_html(seen)
    assert text.count("<tr") == 4 and 'class="chosen"' in text and f"{seen['regret_ms']:,.0f} ms sooner" in text
    assert explain_html(None) == ""


def test_the_why_row_of_sglang_says_what_its_own_tree_believed():
    from lab.page.figures.fleetview import explain_html
    from model import explain
    s = scenario(router__kind="sglang", traffic__session_rate=6)
    html_ = explain_html(explain(s, 400))
    assert "(its own tree)" in html_ and "Its tree matched 96% of the prompt, above its threshold" in html_
    assert "own tree of the text it sent" in router_html(s, simulate(s))
