"""Several embeds in one article on another origin: each boots when shown, and they share one simulator.

The article is served from its own port (tests/support/embedhost.py) and the browser context goes through a recording
proxy, which sees what the shared worker fetches (Playwright's routes do not) and refuses other origins. One
article holds two embeds at the top, with different setups in their URLs, and two far below the fold; a second
context, with SharedWorker removed, holds two at the top. Waits are on each frame's `data-lab`, never sleeps.
"""

import pytest
from conftest import READY, expected_metrics, metrics
from support.embedhost import article_host, article_html, proxied_context

pytestmark = pytest.mark.browser

WAITING = "document.documentElement.dataset.lab === 'waiting'"
RUNTIME = "window.prefixLab.runtime"
GAP = 4000  # px of prose before each embed below the fold (the viewport is 900 px tall)


@pytest.fixture(scope="module")
def host(server):
    with article_host(server["origin"]) as (article, proxy):
        yield article, proxy


def read(browser, host, urls, gaps, init_script=""):
    """A new proxied context reading an article that embeds `urls` (`gaps`: px of prose before each):
    (context, page, its embeds' frames in order, the page errors seen)."""
    article, proxy = host
    proxy.clear()
    context = proxied_context(browser, proxy, viewport={"width": 800, "height": 900})
    context.add_init_script(init_script + "; window.prefixLabLimits = {replaceMs: 1000};")
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(tuple(proxy.origins)) else r.abort())
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    html = article_html(urls, gap_px=0)
    for i, gap in enumerate(gaps):
        if gap:
            html = html.replace(f"<iframe class='prefix-lab' id='embed-{i}'",
                                f"<div style='height: {gap}px'>More prose.</div><iframe class='prefix-lab' id='embed-{i}'")
    page.goto(article.put("/article.html", html))
    page.wait_for_function(f"document.querySelectorAll('iframe.prefix-lab').length === {len(urls)}")
    frames = [page.locator(f"#embed-{i}").element_handle().content_frame() for i in range(len(urls))]
    for frame in frames:
        frame.wait_for_function("window.prefixLab !== undefined", timeout=60_000, polling=100)
    return context, page, frames, errors


def clean(host, errors):
    _, proxy = host
    assert not proxy.foreign, f"requests to other origins: {proxy.foreign[:5]}"
    assert not [f.url for f in proxy.fetches if f.status >= 400], "failed requests"
    assert not errors, errors[:5]


def test_embeds_of_one_article_share_one_simulator_and_those_below_the_fold_wait_until_shown(browser, server, host):
    _, proxy = host
    site = server["url"] + "embed.html?figure=headline"
    setups = ["fleet.replicas=3", "fleet.replicas=6", "router.kind=cache_aware", "fleet.replicas=5"]
    proxy.patch = never_answer_marker
    context, page, frames, errors = read(browser, host, [f"{site}#{s}" for s in setups], [0, 0, GAP, GAP])
    try:
        top, second, below, touched = frames
        for frame in (top, second):
            frame.wait_for_function(READY, timeout=60_000)
        shared = top.evaluate(RUNTIME)
        assert shared["shared"] and second.evaluate(RUNTIME)["id"] == shared["id"]  # one runtime for both
        assert metrics(top) == expected_metrics(setups[0]) and metrics(second) == expected_metrics(setups[1])
        assert metrics(top) != metrics(second)  # each frame computed its own setup
        assert len(proxy.seen("pyodide.asm.wasm")) == 1

        # Below the fold: not started, the build's default numbers shown, and it says when it will start.
        for frame in (below, touched):
            assert frame.evaluate(WAITING) and frame.evaluate(RUNTIME) is None
            assert metrics(frame) == expected_metrics()
        assert "starts when this part of the page is shown" in below.locator("#status").inner_text()

        page.locator("#embed-2").scroll_into_view_if_needed()
        below.wait_for_function(READY, timeout=60_000)
        assert below.evaluate(RUNTIME)["id"] == shared["id"]
        assert metrics(below) == expected_metrics(setups[2])

        # Still far below; a control changed there (keyboard, a script) starts it at once.
        assert touched.evaluate(WAITING)
        touched.evaluate("window.prefixLab.changed('ctl:fleet.replicas', 7, 'value')")
        touched.wait_for_function(f"({READY}) && location.hash.includes('fleet.replicas=7')", timeout=60_000,
                                  polling=100)  # a frame out of view renders nothing: no animation frames to poll on
        assert touched.evaluate(RUNTIME)["id"] == shared["id"]
        assert metrics(touched) == expected_metrics("fleet.replicas=7")
        assert len(proxy.seen("pyodide.asm.wasm")) == 1
        assert page.evaluate("document.getElementById('embed-3').getBoundingClientRect().top") > 900  # not shown

        # The shared worker stuck on one frame's change: a newer change there gives that frame a worker of its own.
        top.evaluate("location.hash = 'marker=1'")  # the patched worker never answers it
        top.wait_for_function("performance.now() - window.prefixLab.timings.lastSent > 1200", timeout=10_000,
                              polling=100)  # scrolled out of view by now
        top.evaluate("location.hash = 'fleet.replicas=2'")
        top.wait_for_function(f"({READY}) && location.hash === '#fleet.replicas=2'", timeout=60_000, polling=100)
        assert not top.evaluate(RUNTIME)["shared"]
        assert metrics(top) == expected_metrics("fleet.replicas=2")
        clean(host, errors)
    finally:
        context.close()
        proxy.patch = None


def never_answer_marker(url, body):
    """worker.js, never answering a view request whose hash holds 'marker' (as in test_resilience_page; it waits
    rather than spins, so as not to take a core from the rest of the suite)."""
    if "/worker." not in url:
        return None
    anchor = '  if (msg.type !== "view") return;\n'
    hook = '  if (String(msg.request.hash).includes("marker")) await new Promise(() => {});\n'
    assert anchor.encode() in body
    return body.replace(anchor.encode(), (anchor + hook).encode(), 1)


def test_without_shared_workers_each_embed_boots_its_own(browser, server, host):
    site = server["url"] + "embed.html?figure=headline"
    setups = ["fleet.replicas=3", "fleet.replicas=6"]
    context, _, frames, errors = read(browser, host, [f"{site}#{s}" for s in setups], [0, 0],
                                      init_script="delete window.SharedWorker")
    try:
        for frame, setup in zip(frames, setups, strict=True):
            frame.wait_for_function(READY, timeout=60_000)
            assert metrics(frame) == expected_metrics(setup)
        runtimes = [frame.evaluate(RUNTIME) for frame in frames]
        assert not any(r["shared"] for r in runtimes) and runtimes[0]["id"] != runtimes[1]["id"]
        clean(host, errors)
    finally:
        context.close()
