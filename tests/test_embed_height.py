"""An embed tells its parent its height: with README's snippet, on a page of another origin, each figure's iframe
ends where its content ends (within 2 px), also when the content grows after the first report."""

import pytest
from conftest import READY

from lab.figures import embed_figures

pytestmark = pytest.mark.browser

SNIPPET = """url => {
    const frame = document.createElement('iframe');
    frame.id = 'prefix-lab';
    frame.src = url;
    frame.style.cssText = 'width: 100%; height: 300px; border: 0';
    document.body.appendChild(frame);
    addEventListener('message', (e) => {
        if (e.data && e.data.type === 'prefix-lab:height')
            document.getElementById('prefix-lab').style.height = e.data.height + 'px';
    });
}"""
CONTENT = "Math.ceil(document.querySelector('.lab').getBoundingClientRect().bottom + " \
          "parseFloat(getComputedStyle(document.body).marginBottom || '0'))"


def embed(host, url):
    """Put the lab in the article with README's snippet; the lab's frame once it has navigated."""
    with host.expect_event("framenavigated", lambda f: f.url == url) as navigated:
        host.evaluate(SNIPPET, url)
    return navigated.value


@pytest.mark.parametrize("figure", embed_figures())
def test_each_figures_iframe_ends_at_its_content(guarded, server, figure):
    context, _, watch = guarded
    host = watch(context.new_page())
    host.set_viewport_size({"width": 760, "height": 900})
    host.set_content("<!doctype html><title>An article</title><p>Some prose before the lab.</p>")
    url = f"{server['url']}embed.html?figure={figure}"
    embedded = embed(host, url)
    embedded.wait_for_function(READY, timeout=60_000)
    content = embedded.evaluate(CONTENT)
    host.wait_for_function(f"Math.abs(document.getElementById('prefix-lab').getBoundingClientRect().height - "
                           f"{content}) <= 2", timeout=10_000)
    assert content > 150
