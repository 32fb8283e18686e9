"""The request film on the page: play, pause and step by role, follow a request, reduced motion, off screen.

The full page's film is the shared lab page's (`fresh_lab`); the embedded film boots its own page.

Each check waits on the film's own state attributes (`data-film-*`, lab/site/film.py), never on sleeps.
"""

import pytest
from conftest import READY, open_lab

pytestmark = pytest.mark.browser

FILM = "embed.html?figure=film"
ATTR = "document.querySelector('.film').dataset"


def film_page(page, server, path=FILM):
    open_lab(page, server, path=path)
    page.locator(".film").scroll_into_view_if_needed()
    return page


def attr(page, name):
    return page.evaluate(f"{ATTR}.{name}")


def more(page, open_):
    """Open or close the film's "More" (speed, moment, follow), as a person does; the shared page remembers it."""
    details = page.locator(".film-more")
    if details.evaluate("d => d.open") != open_:
        details.locator("summary").click()
    page.get_by_role("slider", name="Speed").wait_for(state="visible" if open_ else "hidden")


@pytest.fixture
def film(fresh_lab):
    """The shared lab page's film, put back afterwards as the next test's new page shows it: paused at its
    start, at real time, following nothing, "More" closed (the page remembers it; `reset_lab` does not)."""
    page = fresh_lab  # the full page: the film stands first, in view with nothing opened
    yield page
    more(page, True)
    if page.get_by_role("button", name="Pause").count():
        page.get_by_role("button", name="Pause").click()
    if page.get_by_role("button", name="Stop following").count():
        page.get_by_role("button", name="Stop following").click()
    speed = page.get_by_role("slider", name="Speed")
    speed.press("Home")
    speed.press("ArrowRight")  # the second speed, as the film opens
    assert speed.get_attribute("aria-valuetext") == "0.25 times real time"
    page.get_by_role("slider", name="Time in the run").press("Home")
    page.wait_for_function(f"{ATTR}.filmState === 'paused' && {ATTR}.filmFollowing === '' && Number({ATTR}.filmT) === 0")
    more(page, False)


def test_play_pause_and_step_by_role(film):
    page = film
    assert attr(page, "filmMotion") == "full" and attr(page, "filmState") == "paused"
    page.get_by_role("button", name="Play").click()
    page.wait_for_function(f"{ATTR}.filmState === 'playing' && Number({ATTR}.filmFrames) >= 30", timeout=20_000)
    page.get_by_role("button", name="Pause").click()
    page.wait_for_function(f"{ATTR}.filmState === 'paused'")
    frames, t = int(attr(page, "filmFrames")), float(attr(page, "filmT"))
    assert t > 0
    page.get_by_role("button", name="Step").click()
    page.wait_for_function(f"Number({ATTR}.filmT) > {t}")
    assert int(attr(page, "filmFrames")) == frames  # a step draws once: no animation frame
    more(page, True)
    speed = page.get_by_role("slider", name="Speed")
    speed.focus()
    page.keyboard.press("ArrowRight")
    assert speed.get_attribute("aria-valuetext") == "0.5 times real time"
    time = page.get_by_role("slider", name="Time in the run")
    time.focus()
    page.keyboard.press("End")
    page.wait_for_function(f"Number({ATTR}.filmT) >= 59.9")


def test_following_a_request_says_where_it_is_and_what_it_found(film):
    page = film
    more(page, True)
    page.get_by_role("button", name="Follow the next request").click()
    page.wait_for_function(f"{ATTR}.filmFollowing === '0'")
    said = page.locator(".film-said")
    assert said.text_content().startswith("Request 1 ")
    for _ in range(4):  # it arrives, is prefilled, is served
        page.get_by_role("button", name="Step").click()
    page.wait_for_function(f"['done', 'after'].includes({ATTR}.filmPhase)")
    assert "came from the cache" in said.text_content() and "first token after" in said.text_content()
    page.get_by_role("button", name="Stop following").click()
    page.wait_for_function(f"{ATTR}.filmFollowing === ''")


def test_reduced_motion_draws_no_animation_frame(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, reduced_motion="reduce")
    try:
        page = film_page(context.new_page(), server)
        assert attr(page, "filmMotion") == "reduced"
        assert page.get_by_role("button", name="Play").is_disabled()
        t = float(attr(page, "filmT"))
        page.get_by_role("button", name="Step").click()
        page.wait_for_function(f"Number({ATTR}.filmT) > {t}")
        page.get_by_role("button", name="Step").click()
        assert attr(page, "filmFrames") == "0"
    finally:
        context.close()


def test_the_film_pauses_off_screen_and_takes_up_again_on_screen(fresh_lab):
    page = fresh_lab  # the full page: the film stands first, in view with nothing opened
    page.get_by_role("button", name="Play").click()
    try:
        page.wait_for_function(f"{ATTR}.filmState === 'playing'")
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        page.wait_for_function(f"{ATTR}.filmState === 'offscreen'")
        frames = int(attr(page, "filmFrames"))
        page.wait_for_function(READY)
        page.evaluate("() => new Promise((done) => { let n = 0; const f = () => (++n < 20 ? requestAnimationFrame(f) : done()); requestAnimationFrame(f); })")
        assert int(attr(page, "filmFrames")) == frames  # twenty page frames later, none of them the film's
        page.evaluate("window.scrollTo(0, 0)")
        page.wait_for_function(f"{ATTR}.filmState === 'playing' && Number({ATTR}.filmFrames) > {frames}")
    finally:
        page.get_by_role("button", name="Pause").click()  # the shared page goes on to other tests: still
        page.wait_for_function(f"{ATTR}.filmState === 'paused'")


def test_on_the_full_page_the_speed_and_the_moment_wait_behind_more(fresh_lab):
    page = fresh_lab
    speed = page.get_by_role("slider", name="Speed")
    assert page.get_by_role("button", name="Play").is_visible() and not speed.is_visible()
    more(page, True)
    assert page.get_by_role("button", name="Follow the next request").is_visible()
    more(page, False)  # closed again, as the next test's new page would show it


def test_a_change_gives_the_film_its_new_run(page, server):
    film_page(page, server, path=FILM + "#fleet.replicas=6")
    page.wait_for_function("JSON.parse(document.getElementById('film-data').textContent).replicas === 6")
    assert page.locator(".film-canvas").evaluate("c => c.height > 0")
