"""The workshop room in the browser: two participants play, the facilitator watches and opens a mission.

A second `prefix-lab serve --room` runs on the session's built site. Each
participant and the facilitator have their own browser context (their own
localStorage), guarded like every lab page: nothing may go to another origin,
no page error, no missing file. Waits are on the pages' own state
(`data-lab`, `data-room`, the facilitator's tables), never on sleeps.
"""

import re
import subprocess
import sys
import time

import pytest
from conftest import READY, guarded_context
from test_missions_page import answered, choose, press

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=window.__pwned=1>"


@pytest.fixture(scope="module")
def room(server, tmp_path_factory):
    """`prefix-lab serve --room` on the session's site: its origin, join and facilitator addresses."""
    data = tmp_path_factory.mktemp("room-data")
    proc = subprocess.Popen([sys.executable, "-m", "lab", "serve", "--dir", str(server["site"]), "--port", "0",
                             "--room", "--data", str(data)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    found, lines = {}, []
    deadline = time.monotonic() + 120
    while len(found) < 2 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        for key, pattern in (("join", r"join at (http://\S+/room/join)"), ("facilitator", r"(http://\S+\?token=\S+)")):
            m = re.search(pattern, line)
            if m:
                found[key] = m.group(1)
    if len(found) < 2:
        proc.kill()
        pytest.fail("prefix-lab serve --room did not start:\n" + "".join(lines))
    origin = re.match(r"http://[^/]+", found["join"]).group(0)
    yield {"origin": origin, "url": origin + "/", **found}
    proc.terminate()
    proc.wait(timeout=10)


def join(context, watch, room, name):
    page = watch(context.new_page())
    page.goto(room["join"])
    page.get_by_role("textbox", name="Your name").fill(name)
    page.get_by_role("button", name="Join").click()
    page.wait_for_url(re.compile(re.escape(room["url"]) + r"(#.*)?$"))  # on to the lab (the join page's policy allows no string scripts)
    page.wait_for_function(f"({READY}) && document.documentElement.dataset.room === 'sent'", timeout=60_000)
    return page


def test_two_participants_play_and_the_facilitator_sees_both_live_and_opens_mission_3(browser, room):
    with guarded_context(browser, room) as (refused_ctx, _, _):
        response = refused_ctx.new_page().goto(room["origin"] + "/room/facilitator")
        assert response.status == 401 and "The room" not in response.text()
        response = refused_ctx.new_page().goto(room["origin"] + "/room/facilitator?token=guess")
        assert response.status == 403

    with guarded_context(browser, room) as (fac_ctx, _, fac_watch), \
            guarded_context(browser, room) as (a_ctx, a_guard, a_watch), \
            guarded_context(browser, room) as (b_ctx, _, b_watch), \
            guarded_context(browser, room) as (lone_ctx, lone_guard, lone_watch):
        facilitator = fac_watch(fac_ctx.new_page())
        facilitator.goto(room["facilitator"])
        facilitator.locator("html[data-room=live]").wait_for(state="attached", timeout=30_000)
        assert facilitator.locator(".qr svg").count() == 1

        ada = join(a_ctx, a_watch, room, HOSTILE)
        bob = join(b_ctx, b_watch, room, "Bob")
        assert ada.locator(".room-who").inner_text().startswith(f"In the workshop room as {HOSTILE}.")

        choose(ada, 1, "Nothing is remembered")
        cache = ada.get_by_role("checkbox", name="Prefix cache")
        cache.focus()
        answered(ada, lambda: ada.keyboard.press("Space"))
        press(ada, ada.get_by_role("slider", name="Replicas"), "ArrowLeft", 2)  # 4 -> 2: three stars
        choose(bob, 1, "Nothing is remembered")
        cache = bob.get_by_role("checkbox", name="Prefix cache")
        cache.focus()
        answered(bob, lambda: bob.keyboard.press("Space"))  # one star

        # The facilitator's page follows, with no reload: both rows, their stars, the best setup first.
        # (Waits on the facilitator's page go through locators: its policy allows no script made from a string.)
        for stars in (3, 1):
            facilitator.locator(f'#people tr.person td[data-mission="cache-on"][data-stars="{stars}"]').wait_for(
                timeout=30_000)
        names = facilitator.locator("#people th.name").all_inner_texts()
        assert sorted(names) == sorted([HOSTILE, "Bob"])  # the hostile name is text
        assert facilitator.locator("#people img, #missions img").count() == 0
        first = facilitator.locator('#missions tr[data-mission="cache-on"]')
        assert first.get_attribute("data-passed") == "2"
        best = first.locator("ol.best li").first
        assert best.inner_text().startswith(f"{HOSTILE}: ★★★, 2 replicas")
        link = best.get_by_role("link", name="Show on the projector").get_attribute("href")
        assert link.endswith("#fleet.replicas=2&mission=cache-on&unlock=all")

        # Open mission 3 for everyone: both pages say so; Ada goes there, Bob dismisses it.
        facilitator.get_by_role("button", name="Open mission 3 for everyone").click()
        for page in (ada, bob):
            page.wait_for_function("document.querySelector('.room-open')?.dataset.mission === 'round-robin'",
                                   timeout=30_000)
            assert page.locator(".room-open").inner_text().startswith(
                "Your facilitator opened mission 3: Round robin spreads the memory thin.")
        ada.get_by_role("button", name="Go to mission 3").click()
        ada.wait_for_function(f"({READY}) && location.hash.includes('mission=round-robin')", timeout=30_000)
        assert ada.locator("#predict").is_visible()  # a first play asks for a guess first: Ada skips it
        ada.get_by_role("button", name="Skip the guess").click()
        ada.wait_for_function(f"({READY}) && !location.hash.includes('guess=') && "
                              "document.querySelector('.verdict[data-stars]') !== null", timeout=30_000)
        assert ada.locator(".verdict").get_attribute("data-stars") == "0"  # its broken start, to play
        bob.get_by_role("button", name="Dismiss").click()
        assert bob.locator(".room-open").count() == 0
        bob.reload()
        bob.wait_for_function(f"({READY}) && document.documentElement.dataset.room === 'sent'", timeout=60_000)
        assert bob.locator(".room-open").count() == 0  # dismissed stays dismissed
        facilitator.locator("#people tr.person", has_text="mission 3").first.wait_for(timeout=30_000)

        # A page that never joined sends nothing to the room, as a static copy would not.
        lone = lone_watch(lone_ctx.new_page())
        lone.goto(room["url"])
        lone.wait_for_function(READY, timeout=60_000)
        assert not [u for u in lone_guard.seen if "/room/" in u]
        assert [u for u in a_guard.seen if "/room/api/report" in u]


def test_a_report_the_room_cannot_store_now_is_sent_again(browser, room):
    """A full disk answers 503: the page keeps its state and sends it again, instead of taking it as refused."""
    with guarded_context(browser, room) as (context, guard, watch):
        page = watch(context.new_page())
        refused = []

        def full(route):
            if refused:
                route.fallback()
                return
            refused.append(route.request.post_data)
            route.fulfill(status=503, headers={"Retry-After": "1", "Content-Type": "application/json"},
                          body='{"error": "the room\'s data folder is full"}')

        page.route("**/room/api/report", full)
        page.goto(room["join"])
        page.get_by_role("textbox", name="Your name").fill("Cy")
        page.get_by_role("button", name="Join").click()
        page.wait_for_url(re.compile(re.escape(room["url"]) + r"(#.*)?$"))
        page.wait_for_function(f"({READY}) && document.documentElement.dataset.room === 'sent'", timeout=60_000)
        assert len(refused) == 1  # the first report met the full disk; the same state went again and was stored
        guard.errors[:] = [e for e in guard.errors if "status of 503" not in e]  # the one 503 made here
