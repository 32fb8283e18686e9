"""The page in Chromium: the never-spill switch (declared once in `lab.page.controls`) both ways. Controls are found by
role and accessible name; tests wait on the page's state. (Progress kept by mission id in localStorage is played
through in test_missions_page.py.)"""

import pytest
from conftest import expected_metrics, metrics, open_lab, wait_ready_with
from test_page import checkbox, slider

pytestmark = pytest.mark.browser

NEVER_SPILL = "Never spill (always follow the cache)"
HOT_TENANT = ("duration_s=120&traffic.session_rate=8&fleet.replicas=8&router.kind=cache_aware"
              "&router.spill_threshold_s=off&mission=hot-tenant&unlock=all")


def slider_disabled(handle):
    return handle.evaluate("e => e.getRootNode().querySelector('.noUi-target').hasAttribute('disabled')")


def test_never_spill_can_be_ticked_and_unticked(page, server):
    open_lab(page, server, "router.kind=cache_aware")
    box, handle = checkbox(page, NEVER_SPILL), slider(page, "Spill threshold")
    assert not box.is_checked() and not slider_disabled(handle)
    box.click()
    wait_ready_with(page, "location.hash.includes('router.spill_threshold_s=off')")
    assert box.is_checked() and slider_disabled(handle)
    box.click()
    wait_ready_with(page, "!location.hash.includes('spill_threshold_s')")  # back to the default, 1 s
    assert not box.is_checked() and not slider_disabled(handle)
    assert metrics(page) == expected_metrics("router.kind=cache_aware")


def test_the_hot_tenant_mission_is_passable_from_the_page(page, server):
    open_lab(page, server, HOT_TENANT)
    verdict = page.locator(".verdict")
    assert verdict.get_attribute("data-stars") == "0"
    checkbox(page, NEVER_SPILL).click()
    wait_ready_with(page, "!location.hash.includes('spill_threshold_s')")
    assert verdict.get_attribute("data-stars") == "1"
    handle = slider(page, "Spill threshold")
    handle.focus()
    for _ in range(5):
        handle.press("ArrowLeft")
    wait_ready_with(page, "location.hash.includes('router.spill_threshold_s=0.5')")
    assert verdict.get_attribute("data-stars") == "3"
