"""The page does not jump while it loads: cumulative layout shift below 0.05 at a desk's and a phone's size.

The charts are Bokeh roots drawn only once Bokeh's script has run; without space kept for them at the first
paint, everything under them dropped when they drew (0.28 at 1440x900). Measured with the browser's own
PerformanceObserver for 'layout-shift' entries from the start of the load until the page is ready and two
frames more have been drawn; shifts right after a person's input do not count (the browser marks them).
"""

import pytest
from conftest import READY

pytestmark = pytest.mark.browser

WATCH_SHIFTS = """
window.__shift = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (!entry.hadRecentInput) window.__shift += entry.value;
}).observe({type: "layout-shift", buffered: true});
"""
FRAMES = "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(window.__shift))))"
LIMIT = 0.05


def test_the_page_keeps_its_place_while_it_loads_at_desk_and_phone_sizes(page, server):
    page.add_init_script(WATCH_SHIFTS)
    shifts = {}
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(server["url"])
        page.wait_for_function(READY, timeout=60_000)
        shifts[f"{width}x{height}"] = page.evaluate(FRAMES)
    print("cumulative layout shift:", {k: round(v, 4) for k, v in shifts.items()})
    assert all(v < LIMIT for v in shifts.values()), shifts
