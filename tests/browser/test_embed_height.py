"""An embed tells its parent its height: in an article on another origin, with the docs' snippet, each figure's
iframe ends where its content ends (within 2 px), also when the content grows after the first report (the
frame starts at 300 px and the embed grows as Bokeh lays it out).

The article and the proxy that keeps the browser to the two origins are tests/support/embedhost.py's, shared with
bench/bench_embed_fit.py, which repeats this ten times a figure.
"""

import pytest
from conftest import READY
from support.embedhost import CONTENT_HEIGHT, article_host, article_html, frame_fits, proxied_context

from lab.page.figures import embed_figures

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def host(server):
    with article_host(server["origin"]) as (article, proxy):
        yield article, proxy


def test_each_figures_iframe_ends_at_its_content(browser, server, host):
    """Every figure embedded in one article, read from top to bottom (they share one simulator): each frame,
    once its embed is ready, ends where its content ends."""
    article, proxy = host
    proxy.clear()
    figures = embed_figures()
    context = proxied_context(browser, proxy, viewport={"width": 760, "height": 900})
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(article.put("/every-figure.html",
                              article_html([f"{server['url']}embed.html?figure={f}" for f in figures])))
        misfits = []
        for i, figure in enumerate(figures):
            frame = page.locator(f"#embed-{i}")
            frame.scroll_into_view_if_needed()  # an embed starts when shown
            embedded = frame.element_handle().content_frame()
            embedded.wait_for_function(READY, timeout=60_000)
            content = embedded.evaluate(CONTENT_HEIGHT)
            if not (content > 150 and frame_fits(page, f"embed-{i}", content)):
                misfits.append((figure, content, frame.bounding_box()["height"]))
        assert misfits == []
        assert not proxy.foreign and not errors, (proxy.foreign, errors)
    finally:
        context.close()
