"""A mission that asks for a guess first still gets every shown chart drawn: the landscape under the guess sits
below the fold of the mission column, which clips what it scrolls, so no observer reports it; the page must draw
it anyway, or `prefixLab.undrawn` stays above 0 (scripts/screenshots.py waits on it)."""

import re

import pytest
from conftest import READY, open_lab

pytestmark = pytest.mark.browser

DRAWN = f"({READY}) && window.prefixLab.undrawn === 0"


@pytest.mark.draws_away
def test_a_mission_asking_for_a_guess_draws_every_shown_chart(page, server):
    page.set_viewport_size({"width": 1280, "height": 720})  # a laptop's screen: the landscape is below the column's fold
    open_lab(page, server)  # a new player: nothing stored
    page.wait_for_function(DRAWN, timeout=60_000)
    page.get_by_role("button", name=re.compile(r"^1\. Nothing is remembered, 0 of 3 stars$")).click()
    page.wait_for_function(f"({READY}) && location.hash.includes('guess=ask') && "
                           "!document.querySelector('#landscape').hidden", timeout=30_000)
    assert page.get_by_role("slider", name=re.compile("^Your guess")).is_visible()
    assert page.get_by_role("button", name="Check my guess").is_visible()
    page.wait_for_function(DRAWN, timeout=30_000)
    assert page.locator("#landscape .plot[data-drawn]").count() == 1
