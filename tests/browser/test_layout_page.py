"""The page's layout and accessibility in Chromium, at the sizes people use.

In a mission, the controls it names, its verdict and the headline numbers are on screen together at 1440x900 and
1280x720; on a 390x844 phone the page is one column of full-width charts under a headline that stays in view
while a control changes. axe-core (from npm, injected by the tests only, never shipped) finds no serious or
critical violation on index.html (nor on embed.html, framed in an article: test_csp_page.py), and no tab stop
is a chart canvas, a spinner button or a disabled slider. Screenshots of each size go to test-artifacts/.
"""

import re

import pytest
from conftest import ARTIFACTS, READY, expected_metrics, metrics
from helpers import ROOT

pytestmark = pytest.mark.browser

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
MONDAY = re.compile(r"^8\. Monday morning, \d of 3 stars$")


def serious_violations(page):
    """axe-core's serious and critical violations on the page, one line each."""
    assert AXE.is_file(), "axe-core is missing: run 'npm ci' (it is a devDependency in package.json)"
    # Evaluated, not added as a <script>: the page's Content-Security-Policy rightly refuses inline scripts.
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    return page.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']})).violations
        .filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => `${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 3).map(n => JSON.stringify(n.target)).join(' ')}`)""")


def tab_stops(page, count):
    """What Tab reaches, `count` times from the top: (tag, class, accessible label or text) of each."""
    page.evaluate("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    stops = []
    for _ in range(count):
        page.keyboard.press("Tab")
        stops.append(page.evaluate("""() => { let a = document.activeElement;
            while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
            return [a.tagName, String(a.className), a.getAttribute('aria-label') || a.textContent.trim().slice(0, 40),
                    a.closest('[disabled]') !== null || a.getAttribute('aria-disabled') === 'true',
                    a.getRootNode().host ? a.getRootNode().host.closest('[role=img]') !== null : false]; }"""))
    return stops


def on_screen(page, locator):
    box = locator.bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] + 0.5 \
        and box["x"] >= 0 and box["x"] + box["width"] <= size["width"] + 0.5


def mission_parts(page):
    """What must be on screen together in mission 8: its six controls, its verdict, the headline numbers."""
    return {
        "memory": page.get_by_role("slider", name="Prefix memory per replica (GB)"),
        "replicas": page.get_by_role("slider", name="Replicas"),
        "spill": page.get_by_role("slider", name="Spill threshold (s of backlog)"),
        "router": page.get_by_role("combobox", name="Router"),
        "cache": page.get_by_role("checkbox", name="Prefix cache"),
        "dynamic text": page.get_by_role("group", name="Dynamic text in the prompt"),
        "verdict": page.locator(".verdict"),
        **{key: page.locator(f'[data-metric="{key}"]') for key in ("hit_rate", "ttft_p99_ms", "replica_count")},
    }


def wait_answered(page, before):
    page.wait_for_function(f"({READY}) && window.prefixLab.timings.changes.length > {before}", timeout=30_000)


def first_paint_explains_itself(page):
    """Before the simulator is up: the default numbers (drawn by the build with the same view code), the evidence
    label, the seed page's sections, the site file's links, tips."""
    assert page.evaluate("document.documentElement.dataset.lab") in ("booting", "busy", "ready")
    assert metrics(page) == expected_metrics()
    evidence = page.get_by_role("note").first.inner_text()
    assert "deterministic synthetic model" in evidence and "Python" in evidence and "JavaScript" not in evidence
    headings = [h.inner_text() for h in page.locator(".about h3").all()]
    for section in ("How to play", "What the model assumes", "What it cannot tell you", "Read the full explanation"):
        assert section in headings
    assert "200 tokens" in page.locator(".about").inner_text()
    links = {a.inner_text(): a.get_attribute("href") for a in page.locator(".about a").all()}
    assert links["SGLang: Efficient Execution of Structured Language Model Programs (RadixAttention)"] \
        == "https://arxiv.org/abs/2312.07104"
    assert any("PagedAttention" in t for t in links) and any("engine arguments" in t for t in links)
    assert page.get_by_role("button", name="What is TTFT p99?").get_attribute("aria-describedby") == "help-ttft_p99_ms"
    assert "one request in a hundred" in page.locator("#help-ttft_p99_ms").text_content()


def test_layout_at_desk_and_phone_sizes_and_no_serious_accessibility_violations(page, server):
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(server["url"] + "#unlock=all", wait_until="domcontentloaded")
    first_paint_explains_itself(page)
    page.wait_for_function(READY, timeout=60_000)
    assert serious_violations(page) == []
    stops = tab_stops(page, 45)
    assert not [s for s in stops if "bk-spin-btn" in s[1] or s[4] or s[3]], stops  # spinners, charts, disabled
    assert all(s[2] for s in stops), [s for s in stops if not s[2]]
    factor, panel = page.get_by_role("textbox", name="Burst ×").bounding_box(), page.locator(".controls").bounding_box()
    assert factor["x"] + factor["width"] <= panel["x"] + panel["width"], "the Burst × input spills out of its panel"
    page.screenshot(path=str(ARTIFACTS / "free-play-1440x900.png"))

    before = page.evaluate("window.prefixLab.timings.changes.length")
    page.get_by_role("button", name=MONDAY).click()
    wait_answered(page, before)  # the mission's broken start is loaded and drawn
    guess = page.get_by_role("button", name="Check my guess")  # a first play asks for a guess, in view
    assert on_screen(page, page.locator("#predict-question")) and on_screen(page, guess)
    # Waited on by its own effect: an answer to the fetch of the missions' sweep may come first.
    page.get_by_role("button", name="Skip the guess").click()
    page.wait_for_function(f"({READY}) && !location.hash.includes('guess=') && "
                           "document.querySelector('.verdict[data-stars]') !== null", timeout=30_000)
    for width, height in ((1440, 900), (1280, 720)):
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate("window.scrollTo(0, 0)")
        page.wait_for_function("document.querySelector('.verdict').getBoundingClientRect().bottom < innerHeight")
        hidden = [name for name, part in mission_parts(page).items() if not on_screen(page, part)]
        assert hidden == [], f"at {width}x{height} these are off screen: {hidden}"
        page.screenshot(path=str(ARTIFACTS / f"mission-{width}x{height}.png"))
    assert serious_violations(page) == []

    page.set_viewport_size({"width": 390, "height": 844})
    # every chart laid out again at the phone's width (Bokeh resizes each on its own observer), not only the first
    page.wait_for_function("[...document.querySelectorAll('.chart')].every(c => c.getBoundingClientRect().width <= 390)"
                           " && document.querySelector('.chart').getBoundingClientRect().width > 300")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing sticks out sideways
    charts = [c.bounding_box() for c in page.locator(".chart").all()]
    assert len({round(c["x"]) for c in charts}) == 1 and all(c["width"] >= 350 for c in charts)  # one column
    assert all(a["y"] + a["height"] <= b["y"] for a, b in zip(charts, charts[1:]))
    replicas = page.get_by_role("slider", name="Replicas")
    replicas.scroll_into_view_if_needed()
    before = page.evaluate("window.prefixLab.timings.changes.length")
    replicas.press("ArrowLeft")
    wait_answered(page, before)
    shown = mission_parts(page)
    assert on_screen(page, replicas) and all(on_screen(page, shown[k]) for k in ("hit_rate", "ttft_p99_ms",
                                                                                  "replica_count"))
    assert on_screen(page, page.locator("#verdict-chip"))  # the verdict, in short, stays in the headline
    page.screenshot(path=str(ARTIFACTS / "mission-390x844.png"))
