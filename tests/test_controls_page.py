"""The page in Chromium: the never-spill switch (declared once in `lab.controls`) both ways, and progress kept by
mission id in localStorage. Controls are found by role and accessible name; tests wait on the page's state."""

import json

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


def test_stored_progress_is_kept_by_id_and_unlocks_by_prerequisite(page, server):
    stored = {"cache-on": 1, "a-mission-from-a-later-version": 2}
    page.add_init_script(f"localStorage.setItem('prefix-lab:progress', {json.dumps(json.dumps(stored))})")
    open_lab(page, server, "mission=cache-on&fleet.replicas=2")  # three stars on the first mission
    wait_ready_with(page, "JSON.parse(localStorage.getItem('prefix-lab:progress'))['cache-on'] === 3")
    kept = json.loads(page.evaluate("localStorage.getItem('prefix-lab:progress')"))
    assert kept == {"cache-on": 3, "a-mission-from-a-later-version": 2}
    assert page.locator('button[data-mission="timestamp"]').is_enabled()
    assert page.locator('button[data-mission="round-robin"]').is_disabled()
    assert page.locator("[data-mission=a-mission-from-a-later-version]").count() == 0
