"""Compare mode played on the page: pin by its button, change a control, reload, and the baseline, the deltas and
the locked axes are all still there."""

import pytest
from conftest import READY
from test_missions_page import answered

pytestmark = pytest.mark.browser


def axis_top(page):
    return page.evaluate("Bokeh.documents.map(d => d.get_model_by_name('yr:ttft')).find(Boolean).end")


def test_a_pinned_baseline_shows_what_moved_and_survives_a_reload(fresh_lab):
    page = fresh_lab
    answered(page, lambda: page.get_by_role("button", name="Pin this run as the baseline").click())
    assert "base=" in page.evaluate("location.hash")
    top = axis_top(page)
    answered(page, lambda: page.get_by_role("combobox", name="Router").select_option(label="Cache-aware"))
    deltas = page.locator("#deltas")
    assert deltas.is_visible() and "Against the pinned baseline" in deltas.inner_text()
    assert float(page.locator('[data-delta="hit_rate"]').get_attribute("data-value")) > 0
    assert axis_top(page) == top  # the axes held still across the change
    page.reload()
    page.wait_for_function(f"({READY}) && document.querySelector('#deltas').hidden === false", timeout=60_000)
    assert "cache_aware" in page.evaluate("location.hash") and axis_top(page) == top
    answered(page, lambda: page.get_by_role("button", name="Clear the baseline").click())
    assert page.locator("#deltas").is_hidden() and "base=" not in page.evaluate("location.hash")
    assert page.get_by_role("button", name="Lock the axes").get_attribute("aria-pressed") == "false"
