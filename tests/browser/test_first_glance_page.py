"""What a newcomer sees first (issue 29, finding 8): free play opens with the seed's own controls, the others
wait in sections a person opens (and that stay open after a reload), a mission shows its own controls wherever
they wait, and "Back to the default setup" undoes every change. Controls are counted by their roles, as
assistive technology sees them; sections are opened by clicking their summaries."""

import re

import pytest
from conftest import READY, Guard, expected_metrics, metrics, reset_lab, wait_ready_with

pytestmark = pytest.mark.browser

# What a person can set, by role: each slider, switch, menu and box to type in, and each toggle button ("Lock the
# axes", a mission's button), a named group of them counted once ("Dynamic text in the prompt", like a menu).
ROLES = ("slider", "checkbox", "combobox", "textbox", "spinbutton", "radio")
MOST = 14  # form controls free play may show before anything is opened
SEED = (("checkbox", "Prefix cache"), ("slider", "Prefix memory per replica (GB)"), ("slider", "Replicas"),
        ("combobox", "Router"), ("slider", "Spill threshold (s of backlog)"), ("slider", "New sessions per second"),
        ("group", "Dynamic text in the prompt"), ("textbox", "Start (s)"))
SERVING = "Serving mode: decode, split GPUs, targets"
ROUTERS = "Routers: what they know, their settings"


# Cumulative layout shift as Chromium reports it: the layout-shift entries no input caused, grouped into session
# windows (shifts less than 1 s apart, a window at most 5 s long); the page's CLS is the largest window's sum.
LAYOUT_SHIFT = """window.__shifts = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (!e.hadRecentInput) window.__shifts.push([e.startTime, e.value,
    e.sources.map((s) => `${s.node?.id || s.node?.className || s.node?.nodeName} ${s.previousRect.y}->${s.currentRect.y}`)]);
}).observe({type: 'layout-shift', buffered: true});"""
CLS = """() => { let best = 0, sum = 0, first = -Infinity, last = -Infinity;
  for (const [t, v] of window.__shifts) {
    if (t - last >= 1000 || t - first >= 5000) { sum = 0; first = t; }
    sum += v; last = t; best = Math.max(best, sum);
  }
  return best; }"""
DRAWN = f"({READY}) && window.prefixLab.undrawn === 0 && window.prefixLab.timings.chartsDrawn !== null"


def visible_controls(scope):
    """(role, accessible name) of every form control shown in `scope` (a page or a locator)."""
    found = []
    for role in ROLES:
        found += [(role, el.get_attribute("aria-label") or el.inner_text().strip())
                  for el in scope.get_by_role(role).filter(visible=True).all()]
    for toggle in scope.locator("button[aria-pressed]").filter(visible=True).all():  # pressed or not (Playwright's
        # `pressed=False` finds plain buttons too); a named group of toggles only, a choice of one, is one control, as
        # a menu is (the film's group also holds Step, an action: its toggles count one by one)
        group = toggle.evaluate("""b => { const g = b.closest('[role=group]');
          return g && [...g.querySelectorAll('button')].every((x) => x.hasAttribute('aria-pressed'))
            ? g.getAttribute('aria-label') : null; }""")
        control = ("group", group) if group else ("button", toggle.inner_text().strip())
        if control not in found:
            found.append(control)
    return found


def shown(page, role, name):
    return page.get_by_role(role, name=name, exact=True).filter(visible=True).count() >= 1


def on_first_screen(page, locator):
    """Whether all of `locator`'s box is in the viewport, the page not scrolled."""
    box, size = locator.bounding_box(), page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] and box["width"] > 0


def summary(page, title):
    return page.locator("details.more > summary", has_text=title)


@pytest.mark.draws_away
def test_free_play_shows_few_controls_first_and_a_section_opened_stays_open_after_a_reload(page, server):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(server["url"])
    page.wait_for_function(READY, timeout=60_000)
    controls = visible_controls(page)
    assert len(controls) <= MOST, controls
    for role, name in SEED:
        assert shown(page, role, name), f"free play does not show {role} {name!r}: {controls}"
    serving = page.get_by_role("checkbox", name="Serving mode: decode answers in batches", exact=True)
    assert not serving.is_visible()
    assert not page.get_by_role("slider", name="Prompt (tokens)").first.is_visible()  # the article's, closed too
    assert page.get_by_role("button", name="Back to the default setup").is_visible()
    film, ttft = page.locator(".film-canvas"), page.locator('[data-figure="ttft"] .plot')
    assert on_first_screen(page, film) and on_first_screen(page, ttft), "the film and the main chart start in view"
    assert shown(page, "button", "Play")

    summary(page, SERVING).click()  # opened as a person does
    serving.wait_for(state="visible")  # its controls are drawn once their section is on screen
    assert len(visible_controls(page)) > len(controls)
    page.reload()
    page.wait_for_function(READY, timeout=60_000)
    serving.wait_for(state="visible")
    assert page.locator("#more-serving").evaluate("d => d.open")
    assert not page.locator("#more-router").evaluate("d => d.open")  # the others as they were: closed

    summary(page, SERVING).click()
    page.reload()
    page.wait_for_function(READY, timeout=60_000)
    assert not page.locator("#more-serving").evaluate("d => d.open")
    assert not serving.is_visible()


def test_a_mission_shows_its_own_controls_wherever_they_wait_and_no_others(fresh_lab):
    page = fresh_lab
    reset_lab(page, "unlock=all")
    page.get_by_role("button", name=re.compile(r"^10\. The router remembers too much")).click()
    wait_ready_with(page, "location.hash.includes('mission=')")
    ttl = page.get_by_role("slider", name="Router forgets after (s)")
    ttl.wait_for(state="visible")  # its section opened by the mission, not by the player
    assert sorted(visible_controls(page.locator(".controls"))) == [("checkbox", "Never forget"),
                                                                   ("slider", "Router forgets after (s)")]
    assert page.locator("#more-serving").is_hidden()  # no control of this mission waits there
    assert page.locator(".film").is_hidden()  # free play's film: a mission shows its own things
    assert page.get_by_role("button", name="Back to the default setup").is_hidden()

    page.get_by_role("button", name=re.compile(r"^Free play")).first.click()
    wait_ready_with(page, "!location.hash.includes('mission=')")
    assert page.locator(".film").is_visible()
    assert not page.locator("#more-router").evaluate("d => d.open")  # back as the player left it: closed
    assert page.locator("#more-serving").is_visible()


def test_back_to_the_default_setup_undoes_every_change(fresh_lab):
    page = fresh_lab
    page.get_by_role("combobox", name="Router").select_option(label="Cache-aware")
    wait_ready_with(page, "location.hash.includes('router.kind=cache_aware')")
    replicas = page.get_by_role("slider", name="Replicas")
    replicas.press("ArrowRight")
    wait_ready_with(page, "location.hash.includes('fleet.replicas=5')")
    page.get_by_role("button", name="Inject timestamp").click()
    wait_ready_with(page, "location.hash.includes('events=')")
    assert metrics(page) != expected_metrics()

    page.get_by_role("button", name="Back to the default setup").click()
    wait_ready_with(page, "location.hash === ''")
    assert metrics(page) == expected_metrics()
    assert page.get_by_role("combobox", name="Router").input_value() == "Least loaded"
    assert float(replicas.get_attribute("aria-valuetext")) == 4
    assert page.locator("#events-list").inner_text().startswith("No events")


@pytest.mark.draws_away
@pytest.mark.parametrize("width, height", [(1440, 900), (390, 844)])
def test_the_page_does_not_jump_while_it_loads(guarded, server, width, height):
    """Every chart keeps its room from the first paint: what is below it does not drop when it draws."""
    context, _, watch = guarded
    context.add_init_script(LAYOUT_SHIFT)
    page = watch(context.new_page())
    page.set_viewport_size({"width": width, "height": height})
    page.goto(server["url"])
    page.wait_for_function(DRAWN, timeout=90_000)  # booted, answered, and every part shown drawn
    page.evaluate("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    shift = page.evaluate(CLS)
    assert shift < 0.05, f"cumulative layout shift {shift:.4f} at {width}x{height}: {page.evaluate('window.__shifts')}"


def tip_of(page, scope, label):
    """The text the "?" beside `label` in `scope` shows, once it is hovered or tapped (it says so by being shown)."""
    button = page.locator(scope).get_by_role("button", name=f"What is {label}?", exact=True)
    return button, page.locator("#" + button.get_attribute("aria-describedby"))


COLUMNS = {  # the numbers of each table, and a word of the unit or meaning its column's tip must give
    "#replicas": (("Requests", "requests"), ("Hit rate", "per cent"), ("Busy", "per cent"),
                  ("Prefill GPU-s", "seconds")),
    "#slowest": (("Request", "number"), ("Arrived", "seconds"), ("Cached", "per cent"), ("TTFT", "milliseconds")),
}


def test_every_number_says_its_unit_and_meaning_on_hover(fresh_lab):
    page = fresh_lab
    for label in ("Hit rate", "TTFT p50", "TTFT p99", "Throughput", "Replicas"):  # the headline's
        button, tip = tip_of(page, ".headline", label)
        button.hover()
        assert tip.is_visible() and len(tip.inner_text()) > 20, label
    for table, columns in COLUMNS.items():
        for label, word in columns:
            button, tip = tip_of(page, table, label)
            button.scroll_into_view_if_needed()
            button.hover()
            assert tip.is_visible() and word in tip.inner_text().lower(), (table, label, tip.inner_text())
    plot = page.locator('[data-figure="ttft"] .plot')  # a chart's own tooltip names each number and its unit
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.6)
    tooltip = page.locator(".bk-tooltip-content").filter(visible=True).first
    tooltip.wait_for(state="visible")
    said = tooltip.inner_text()
    assert re.search(r"time:\s*\d+ s", said) and re.search(r"TTFT p50:\s*\d+ ms", said), said
    page.mouse.move(0, 0)


def test_a_tap_on_a_question_mark_says_what_the_number_is_on_a_phone(browser, server):
    """On a touch screen there is no hover: a tap on the "?" shows the same words."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    guard = Guard(server["origin"])
    context.route("**/*", guard.route)
    try:
        page = context.new_page()
        page.goto(server["url"])
        page.wait_for_function(READY, timeout=60_000)
        for scope, label in ((".headline", "TTFT p99"), ("#slowest", "TTFT")):
            button, tip = tip_of(page, scope, label)
            button.scroll_into_view_if_needed()
            assert not tip.is_visible()
            button.tap()
            assert tip.is_visible() and "first token" in tip.inner_text(), (scope, tip.inner_text())
            box, width = tip.bounding_box(), page.viewport_size["width"]
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"{scope} {label}'s tip leaves the screen"
    finally:
        context.close()
    guard.check()
