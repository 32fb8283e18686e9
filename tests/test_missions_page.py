"""Missions in the browser: play the first two to three stars through the controls, keep the progress.

Playing shares the module's booted page (`fresh_lab`); the next visit, which
reads the saved progress while it boots, opens its own (`page`).
"""

import json

import pytest
from conftest import ARTIFACTS, READY, open_lab, reset_lab, wait_ready_with
from test_page import checkbox, slider

pytestmark = pytest.mark.browser


PROGRESS_KEY = "prefix-lab:progress"  # where the bridge keeps the best stars per mission
PLAYED = {"cache-on": 3, "timestamp": 3}  # the progress after the first two missions at three stars


def stars_shown(page):
    return page.evaluate("document.querySelector('.verdict') && Number(document.querySelector('.verdict').dataset.stars)")


def test_play_the_first_two_missions_to_three_stars_and_the_progress_is_saved(fresh_lab):
    page = fresh_lab
    assert page.locator('button[data-mission="timestamp"]').is_disabled()

    page.locator('button[data-mission="cache-on"]').click()
    wait_ready_with(page, "location.hash.includes('mission=cache-on')")
    page.get_by_role("button", name="Load mission setup").click()
    wait_ready_with(page, "location.hash.includes('fleet.cache=false')")
    assert page.locator(".verdict").get_attribute("data-passed") == "false"
    assert stars_shown(page) == 0

    checkbox(page, "Prefix cache").click()
    wait_ready_with(page, "!location.hash.includes('fleet.cache=false')")
    assert stars_shown(page) == 1 and "Mission passed" in page.locator(".verdict").inner_text()
    handle = slider(page, "Replicas")
    handle.focus()
    handle.press("ArrowLeft")
    handle.press("ArrowLeft")
    wait_ready_with(page, "location.hash.includes('fleet.replicas=2')")
    assert stars_shown(page) == 3
    assert page.locator('button[data-mission="cache-on"]').get_attribute("data-stars") == "3"
    assert page.locator('button[data-mission="timestamp"]').is_enabled()  # the next one unlocked

    page.locator('button[data-mission="timestamp"]').click()
    wait_ready_with(page, "location.hash.includes('mission=timestamp')")
    page.get_by_role("button", name="Load mission setup").click()
    wait_ready_with(page, "location.hash.includes('dynamic_text=top')")
    assert stars_shown(page) == 0
    assert slider(page, "Replicas").evaluate(
        "e => e.getRootNode().querySelector('.noUi-target').hasAttribute('disabled')")  # not this mission's control
    page.get_by_role("button", name="None", exact=True).click()
    wait_ready_with(page, "!location.hash.includes('dynamic_text')")
    assert stars_shown(page) == 3
    assert page.locator('button[data-mission="round-robin"]').is_enabled()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "missions.png"))

    assert json.loads(page.evaluate(f"localStorage.getItem({json.dumps(PROGRESS_KEY)})")) == PLAYED
    assert "mission=timestamp" in page.evaluate("location.hash")  # the link reopens the mission

    page.get_by_role("button", name="Reset progress").click()
    page.wait_for_function(f"({READY}) && document.querySelector('button[data-mission=\"round-robin\"]').disabled",
                           timeout=30_000)
    assert page.evaluate(f"localStorage.getItem({json.dumps(PROGRESS_KEY)})") == "{}"


def test_progress_kept_in_the_browser_is_shown_on_the_next_visit(page, server):
    page.add_init_script(f"localStorage.setItem({json.dumps(PROGRESS_KEY)}, {json.dumps(json.dumps(PLAYED))})")
    open_lab(page, server, "mission=timestamp")
    assert page.locator('button[data-mission="cache-on"]').get_attribute("data-stars") == "3"
    assert page.locator('button[data-mission="timestamp"]').get_attribute("data-stars") == "3"
    assert page.locator('button[data-mission="round-robin"]').is_enabled()
    assert page.locator('button[data-mission="hot-tenant"]').is_disabled()
    assert "mission=timestamp" in page.evaluate("location.hash")  # the link reopens the mission
    assert page.locator("#notices").inner_text().strip() == ""  # the mission is open, not refused as locked


def test_facilitator_link_unlocks_every_mission(fresh_lab):
    page = reset_lab(fresh_lab, "unlock=all&mission=monday")
    assert page.locator("button.mission.locked").count() == 0
    assert "Monday morning" in page.locator(".mission-detail").inner_text()
