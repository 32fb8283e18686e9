"""The request film's frame rate while the worker computes a change (issue 29: 50 frames a second or more).

    python bench/bench_film.py [--url http://127.0.0.1:8000/] [--seconds S] [--only WORDS]

Opens the film alone (`embed.html?figure=film`) and on the full page (where it stands first), at 1440x900 and 390x844 (the phone
at three device pixels a CSS pixel, and once more with its CPU slowed four times through Chrome's own
throttling), scrolls to it and presses Play. It counts requestAnimationFrame callbacks (the film draws in
one each while it plays) for 2 s with nothing else going on (`playing`), then for S seconds of control
changes the simulation reads (Replicas and Prefix memory in turn, through setups the page has not
run lately), each sent once the last is on screen. Printed, in
frames a second: while the worker computed a change (from its sending to the worker's answer, by the
bridge's own `timings.changes`), and over the whole change including the page writing the answer into
its charts; then the longest gap between two frames, the changes made, the median compute time, and
the film's own drawing time a frame (`data-film-draw-ms`).
Without --url it builds the site if needed and serves it with `prefix-lab serve`. Figures, not asserts.
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.browser import launch, serve_site  # noqa: E402

READY = "document.documentElement.dataset.lab === 'ready'"
WATCH = """() => {
  window.__filmWatch = { t: [], start: performance.now(), changes: window.prefixLab.timings.changes.length };
  const w = window.__filmWatch;
  const tick = (ts) => { w.t.push(ts); if (!w.stop) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""
# Frames per second over [a, b] from the page's rAF times; the film draws in those same callbacks while it plays.
READ = """(idle) => {
  const w = window.__filmWatch; w.stop = true;
  const film = document.querySelector('.film');
  const end = performance.now();
  const windows = idle ? [[w.start, end]]
    : window.prefixLab.timings.changes.slice(w.changes).map((c) => [c.sent, c.sent + c.computeMs]);
  const whole = idle ? [[w.start, end]]
    : window.prefixLab.timings.changes.slice(w.changes).map((c) => [c.sent, c.applied]);
  const rate = (ws) => {
    let frames = 0, ms = 0;
    for (const [a, b] of ws) { frames += w.t.filter((t) => t >= a && t <= b).length; ms += b - a; }
    return ms ? (frames / ms) * 1000 : null;
  };
  let gap = 0;
  for (let i = 1; i < w.t.length; i++) gap = Math.max(gap, w.t[i] - w.t[i - 1]);
  return { computing: rate(windows), changing: rate(whole), all: (w.t.length / (end - w.start)) * 1000, gap,
           changes: windows.length, computeMs: windows.map(([a, b]) => b - a), state: film.dataset.filmState,
           filmFrames: Number(film.dataset.filmFrames), drawMs: film.dataset.filmDrawMs };
}"""
CASES = (("film alone, 1440x900", "embed.html?figure=film", (1440, 900), 1),
         ("full page, 1440x900", "", (1440, 900), 1),
         ("film alone, 390x844", "embed.html?figure=film", (390, 844), 1),
         ("full page, 390x844", "", (390, 844), 1),
         ("film alone, 390x844, CPU / 4", "embed.html?figure=film", (390, 844), 4))


def measure(browser, url: str, path: str, size: tuple[int, int], slow: int, seconds: float) -> dict:
    """Idle playing first (no change), then changes back to back for `seconds`: the figures of both."""
    context = browser.new_context(viewport={"width": size[0], "height": size[1]},
                                  device_scale_factor=3 if size[0] < 500 else 1)
    page = context.new_page()
    page.goto(url + path)
    page.wait_for_function(READY + " && window.prefixLab.undrawn === 0", timeout=90_000)
    page.locator(".film").scroll_into_view_if_needed()
    if slow > 1:
        page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": slow})
    page.get_by_role("button", name="Play").click()
    page.wait_for_function("document.querySelector('.film').dataset.filmState === 'playing'")
    page.evaluate(WATCH)
    page.wait_for_timeout(2000)  # a bench, not a test: a fixed window of playing
    idle = page.evaluate(READ, True)
    page.evaluate(WATCH)
    k = 0
    t_end = page.evaluate("performance.now()") + seconds * 1000
    while page.evaluate("performance.now()") < t_end:
        name, value = ("ctl:fleet.replicas", 3 + k % 10) if k % 2 == 0 else ("ctl:fleet.memory_gb", 2 + (k // 2) % 13)
        k += 1  # a setup not run before, as far as the page's memo of recent runs goes
        before = page.evaluate("window.prefixLab.timings.changes.length")
        page.evaluate(f"window.prefixLab.changed('{name}', {value}, 'value_throttled')")
        page.wait_for_function(f"window.prefixLab.timings.changes.length > {before} && {READY}", timeout=60_000)
    busy = page.evaluate(READ, False)
    context.close()
    return {"idle": idle, "busy": busy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--only", default="", help="only the cases whose name holds these words (\"full page\")")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = (None, args.url) if args.url else serve_site(Path(tmp) / "site")
        try:
            with sync_playwright() as p:
                browser = launch(p)
                print(f"{'case':32} {'playing':>8} {'computing':>10} {'computing+applying':>19} {'worst gap':>10} "
                      f"{'changes':>8} {'compute':>8} {'film draw (median, worst)':>26}")
                for name, path, size, slow in (c for c in CASES if args.only in c[0]):
                    m = measure(browser, url, path, size, slow, args.seconds)
                    b = m["busy"]
                    print(f"{name:32} {m['idle']['all']:8.1f} {b['computing']:10.1f} {b['changing']:19.1f} "
                          f"{b['gap']:7.0f} ms {b['changes']:8d} {statistics.median(b['computeMs']):5.0f} ms "
                          f"{b['drawMs'].replace(' ', ' ms, '):>23} ms")
                browser.close()
        finally:
            if proc is not None:
                proc.terminate()


if __name__ == "__main__":
    main()
