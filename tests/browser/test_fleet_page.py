"""Serving mode and the routers on the page, played through named controls, checked against the CLI."""


import pytest
from conftest import cli, expected_metrics, metrics, open_section, wait_ready_with
from test_page import checkbox, slider

pytestmark = pytest.mark.browser


def test_serving_mode_shows_its_figures_and_the_memory_split(fresh_lab):
    page = fresh_lab
    assert page.locator("#serving").is_hidden()
    open_section(page, "serving")
    checkbox(page, "Serving mode: decode answers in batches").click()
    wait_ready_with(page, "location.hash.includes('fleet.decode=true')")
    expected = cli("run", "--json", "--set", "fleet.decode=true")
    assert metrics(page) == expected_metrics("fleet.decode=true")
    panel = page.locator("#serving")
    assert panel.is_visible()
    assert f"p99 {expected['tpot_p99_ms']:,.1f} ms" in panel.inner_text()
    assert f"{expected['configured_rps']:.2f} configured" in panel.inner_text()
    notices = page.locator("#notices").inner_text()  # the lab preset has no decode figures: said in people's words
    assert "14B on H100 (the article's example)" in notices and "article_14b_h100" not in notices
    running = page.evaluate("""() => {
        for (const doc of Bokeh.documents) for (const m of doc.all_models)
            if (m.name === 'src:memory') return Math.max(...m.data.running);
    }""")
    assert running > 0


def test_a_router_parameter_is_a_slider_of_its_own_router(fresh_lab):
    page = fresh_lab
    open_section(page, "router")
    bound = slider(page, "Load bound")
    assert bound.evaluate("e => e.getRootNode().querySelector('.noUi-target').hasAttribute('disabled')")
    page.get_by_role("combobox", name="Router").select_option(label="Bounded-load hash")
    wait_ready_with(page, "location.hash.includes('router.kind=bounded_hash')")
    assert "Bounded-load hash" in page.locator("#router-info").inner_text()
    bound.focus()
    bound.press("ArrowLeft")
    wait_ready_with(page, "location.hash.includes('router.load_factor=1.2')")
    assert metrics(page) == expected_metrics("router.kind=bounded_hash", "router.load_factor=1.2")


def test_what_the_router_saw_for_a_slow_request(fresh_lab):
    page = fresh_lab
    page.get_by_role("combobox", name="Router").select_option(label="Round robin")
    wait_ready_with(page, "location.hash.includes('router.kind=round_robin')")
    first = page.locator('#slowest button[data-action="explain"]').first
    request = int(first.get_attribute("data-request"))
    first.click()
    wait_ready_with(page, f"location.hash.includes('explain={request}')")
    seen = cli("run", "--set", "router.kind=round_robin", "--explain", str(request), "--json")
    rows = page.locator("#explain tbody tr")
    assert rows.count() == len(seen["replicas"]) == 4
    for row, replica in zip(rows.all(), seen["replicas"]):
        assert row.locator("td").last.inner_text() == f"{replica['ttft_ms']:,.0f} ms"
    assert f"request {request}" in page.locator("#explain h3").inner_text()
    slider(page, "Replicas").focus()
    slider(page, "Replicas").press("ArrowRight")  # any change closes the explanation
    wait_ready_with(page, "!location.hash.includes('explain=')")
    assert page.locator("#explain").is_hidden()
