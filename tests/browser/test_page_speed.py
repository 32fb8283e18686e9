"""What the page does to keep a control change cheap (static/bridge.js), checked as behaviour, not as time.

BokehJS 3.9 reads each visual property from CSS (`--bk-line-color` and so on) before its model value, and
each read after one of its own writes recomputes styles. This site defines no `--bk-*` property, so the
bridge answers those reads with what they would give, the empty string; the plot's font size, which CSS
does set, is read once per script run. How much that saves is printed by bench/bench_page.py.
"""

import json
import re

import pytest
from conftest import READY, SETTLED, expected_metrics, metrics, reset_lab

pytestmark = pytest.mark.browser

def test_a_change_redraws_the_charts_without_reading_bokehs_css_properties(fresh_lab):
    page = fresh_lab
    page.evaluate("""() => {
        window.__bkReads = 0;
        const read = CSSStyleDeclaration.prototype.getPropertyValue;
        window.__restoreReads = () => { CSSStyleDeclaration.prototype.getPropertyValue = read; };
        CSSStyleDeclaration.prototype.getPropertyValue = function (name) {
            if (String(name).startsWith("--bk-")) window.__bkReads += 1;
            return read.call(this, name);
        };
    }""")
    try:
        views = page.evaluate("window.prefixLab.timings.changes.length")
        page.get_by_role("slider", name=re.compile("Replicas", re.I)).first.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"window.prefixLab.timings.changes.length > {views} && {READY}", timeout=60_000)
        page.evaluate("new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)))")
        assert page.evaluate("window.prefixLab.timings.changes.at(-1).written") > 0  # the charts took new data
        assert page.evaluate("window.__bkReads") == 0
    finally:
        page.evaluate("window.__restoreReads()")


def test_a_plots_font_size_is_read_once_per_script_run_and_afresh_after(fresh_lab):
    sizes = fresh_lab.evaluate("""async () => {
        const { PlotView } = Bokeh.require("models/plots/plot_canvas");
        const all = function* (view) { yield view; for (const child of view.child_views ?? []) yield* all(child); };
        const view = [...Bokeh.index].flatMap(top => [...all(top)]).find(v => v instanceof PlotView);
        const before = view.base_font_size;
        view.el.style.fontSize = `${before + 7}px`;
        const sameRun = view.base_font_size;
        await Promise.resolve();
        const nextRun = view.base_font_size;
        view.el.style.fontSize = "";
        return [before, sameRun, nextRun];
    }""")
    before, same_run, next_run = sizes
    assert before > 0 and same_run == before and next_run == before + 7, sizes


HEAVY = "router.kind=cache_aware&traffic.session_rate=8"  # its most replicas take the worker about half a second


def test_a_change_made_while_one_is_worked_out_goes_to_the_worker_before_that_answer_is_drawn(fresh_lab):
    """The worker works out the next value while the page writes and paints the last answer, not after it."""
    page = reset_lab(fresh_lab, HEAVY)
    page.evaluate("""() => document.addEventListener("keydown", (e) => {
        (window.__keysAt ??= []).push([e.key, performance.now()]); }, true)""")
    slider = page.get_by_role("slider", name=re.compile("Replicas", re.I)).first
    slider.focus()
    tried = []
    for first_key, second_key in [("End", "Home"), ("Home", "End"), ("End", "Home")]:
        views = page.evaluate("window.prefixLab.timings.changes.length")
        page.keyboard.press(first_key)  # a long run: the next key comes while it is worked out ...
        page.keyboard.press(second_key)
        page.wait_for_function(f"window.prefixLab.timings.changes.length >= {views + 2} && {READY}",
                               timeout=60_000)
        first, second = page.evaluate(f"window.prefixLab.timings.changes.slice({views}, {views + 2})")
        pressed = page.evaluate("window.__keysAt.at(-1)[1]")
        tried.append((first, second, pressed))
        if pressed < first["sent"] + first["computeMs"]:  # ... unless a loaded machine pressed it too late
            break
    else:
        raise AssertionError(f"the second key never came while the first change was worked out: {tried}")
    assert second["sent"] < first["applied"], (first, second)
    want = "fleet.replicas=1" if second_key == "Home" else f"fleet.replicas={int(float(slider.get_attribute('aria-valuemax')))}"
    assert metrics(page) == expected_metrics(*HEAVY.split("&"), want)


SOURCE = """name => {
    const model = Bokeh.documents.map(d => d.get_model_by_name(name)).find(Boolean);
    const data = model.data instanceof Map ? Object.fromEntries(model.data) : model.data;
    return JSON.stringify(Object.entries(data).map(([k, v]) => [k, Array.from(v)]));
}"""


def test_charts_far_off_screen_wait_while_a_slider_is_dragged_and_catch_up_when_the_page_is_idle(fresh_lab):
    """A drag sends changes while the handle moves: each redraws the charts in view at once and holds those three
    screens below, which are drawn once the page is idle."""
    page = fresh_lab
    page.wait_for_function("window.prefixLab.undrawn === 0", timeout=60_000)  # all drawn, three screens of them
    far, near = page.evaluate(SOURCE, "src:gpu"), page.evaluate(SOURCE, "src:ttft")
    box = page.get_by_role("slider", name="Replicas").bounding_box()
    views = page.evaluate("window.prefixLab.timings.changes.length")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    try:
        page.mouse.move(box["x"] + box["width"] / 2 + 120, box["y"] + box["height"] / 2, steps=4)
        page.wait_for_function(f"window.prefixLab.timings.changes.length > {views} && {READY}", timeout=60_000)
        assert "fleet.replicas=" in page.evaluate("location.hash")
        change = page.evaluate("window.prefixLab.timings.changes.at(-1)")
        assert change["written"] > 0 and change["held"] > 0, change  # the GPU cost chart is far below: held
        assert page.evaluate(SOURCE, "src:ttft") != near  # the chart in view follows the slider
        views = page.evaluate("window.prefixLab.timings.changes.length")
    finally:
        page.mouse.up()
    page.wait_for_function(f"window.prefixLab.timings.changes.length > {views} && {READY}", timeout=60_000)
    page.wait_for_function("window.prefixLab.undrawn === 0", timeout=30_000)
    assert page.evaluate(SOURCE, "src:gpu") != far  # caught up while idle


def test_panels_model_definitions_are_decoded_once_for_all_the_documents(fresh_lab, server):
    """Every document the build cut (lab/site/pagedocs.py) carries the same `defs`: the page decodes them into Bokeh's
    default resolver once, and each document resolves them from there."""
    names = fresh_lab.evaluate("""() => {
        const resolver = Bokeh.require("base").default_resolver;
        const text = document.querySelector('script[type="application/json"]').textContent;
        const docs = Object.values(JSON.parse(Bokeh.require("core/util/string").unescape(text)));
        return {count: docs.length, names: docs[0].defs.map(d => d.name),
                known: docs[0].defs.filter(d => resolver.get(d.name, null) !== null).length};
    }""")
    assert names["count"] > 10 and names["known"] == len(names["names"]) > 0, names


@pytest.mark.draws_away
def test_a_part_that_cannot_be_made_is_left_out_and_the_rest_of_the_page_is_made(guarded, server):
    """The last of the page's documents names a model BokehJS does not have: it is left out (and said so in the
    console), and the first answer, the charts on screen and every other document are still made and drawn."""
    def broken(route):
        response = route.fetch()
        body = response.text()
        block = re.search(r'(<script type="application/json" id="[^"]+">)(.*?)(</script>)', body, re.S)
        docs = json.loads(block.group(2))
        docs[list(docs)[-1]]["roots"][0]["name"] = "NoSuchModel"
        route.fulfill(response=response, body=body[:block.start(2)] + json.dumps(docs) + body[block.end(2):])

    context, guard, watch = guarded
    page = watch(context.new_page())
    page.route(re.compile(r".*/(index\.html)?$"), broken)
    page.goto(server["url"])
    page.wait_for_function(READY, timeout=90_000)
    assert metrics(page) == expected_metrics()
    documents = page.evaluate("window.prefixLab.timings.modelsMade.documents")
    page.keyboard.press("End")  # every part comes near
    page.wait_for_function(f"window.prefixLab.undrawn === 0 && window.prefixLab.timings.made.length === {documents - 1}",
                           timeout=60_000)
    said = [e for e in guard.errors if "NoSuchModel" in e or "a part of the page could not be drawn" in e]
    assert any("could not be made" in e for e in said), guard.errors
    guard.errors[:] = [e for e in guard.errors if e not in said]  # the ones we caused; any other still fails


def test_the_page_holds_exactly_the_html_the_view_sends(fresh_lab):
    """So the bridge, which rewrites a panel only when its HTML differs, leaves unchanged panels alone."""
    page = fresh_lab
    # The last answer's patches, held until the page has settled: a view's event comes after its charts are
    # painted, by which time the HTML of an answer that came after it (one change can bring two) is written.
    page.evaluate("""() => { window.__lastDom = null; window.__keepLast = (e) => { window.__lastDom = e.detail.patches.dom || {}; };
      document.addEventListener('prefix-lab:view', window.__keepLast); }""")
    differ = """() => Object.entries(window.__lastDom).filter(([selector, patch]) => 'html' in patch &&
        [...document.querySelectorAll(selector)].some((el) => el.innerHTML !== patch.html)).map(([s]) => s)"""
    steps = ["window.prefixLab.changed('ctl:fleet.replicas', 6, 'value')",
             "window.prefixLab.action({type: 'select_mission', mission: 'cache-on'})",
             "window.prefixLab.changed('ctl:fleet.cache', true, 'active')",
             "window.prefixLab.action({type: 'add_event', kind: 'surge'}, ['evt:at', 'evt:duration'])"]
    try:
        for step in steps:
            before = page.evaluate(f"() => {{ const n = window.__labViews; {step}; return n; }}")
            page.wait_for_function(f"window.__labViews > {before} && {READY}", timeout=60_000)
            page.wait_for_function(SETTLED, timeout=60_000)
            assert page.evaluate(differ) == [], step
    finally:
        page.evaluate("document.removeEventListener('prefix-lab:view', window.__keepLast)")
