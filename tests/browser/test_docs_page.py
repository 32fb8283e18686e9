"""The documentation as `prefix-lab serve` ships it at /docs/: every page opens under the site's
Content-Security-Policy with no violation, asks no other origin for anything (the `guarded` context aborts
and records such requests, and fails on console errors and 404s), and links to nothing that is not there,
anchors included. Search works with no server-side help."""

import re
from urllib.parse import urldefrag, urljoin

import pytest

pytestmark = pytest.mark.browser

LISTEN = """
window.violations = [];
document.addEventListener('securitypolicyviolation', e =>
    window.violations.push(`${e.effectiveDirective} blocked ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));
"""


def _ids(html):
    return set(re.findall(r'\bid="([^"]+)"', html))


def test_every_docs_page_opens_under_the_policy_with_no_outside_request_and_no_broken_link(page, server, guarded):
    _, guard, _ = guarded
    page.add_init_script(LISTEN)
    site, origin = server["site"], server["origin"]
    pages = sorted(p.relative_to(site).as_posix() for p in (site / "docs").rglob("*.html") if p.name != "404.html")
    assert len(pages) >= 15
    links: dict[str, set[str]] = {}  # target without its fragment -> the fragments asked of it
    for name in pages:
        response = page.goto(f"{origin}/{name}")
        assert response.status == 200, name
        policy = response.headers["content-security-policy"]
        assert "'sha256-" in policy and "'unsafe-inline'" not in policy.split("script-src", 1)[1].split(";")[0]
        page.wait_for_load_state("load")
        assert page.evaluate("window.violations") == [], name
        for href in page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)"):
            target, fragment = urldefrag(href)
            if target.startswith(origin + "/"):
                links.setdefault(target, set()).add(fragment)
    assert f"{origin}/index.html" in links  # the docs lead back to the lab
    for target, fragments in sorted(links.items()):
        answer = page.request.get(target)
        assert answer.status == 200, target
        if target.endswith(".html"):
            missing = {f for f in fragments if f} - _ids(answer.text())
            assert not missing, f"{target}: no anchor {sorted(missing)}"
    guard.check()


def test_the_labs_help_links_open_the_docs(page, server):
    html = page.request.get(server["url"]).text()
    assert re.search(r'<a href="docs/model\.html">Its assumptions</a>', html)  # the evidence label's link
    targets = set(re.findall(r'href="(docs/[^"#]+)', html))
    assert {"docs/model.html", "docs/workshop.html", "docs/index.html", "docs/missions.html"} <= targets
    for target in targets:
        assert page.request.get(urljoin(server["url"], target)).status == 200, target


def test_the_docs_search_finds_a_page_in_the_browser(page, server):
    page.goto(f"{server['origin']}/docs/index.html")
    # The search index is built by a worker once the page is in; the query is typed key by key once the search
    # says it is ready, as a person would (a value filled in at once is searched only if the index is not ready
    # yet, and was once never searched on a busy machine).
    page.wait_for_function("!document.querySelector('.md-search-result__meta').textContent.includes('Initializing')",
                           timeout=60_000)
    page.get_by_role("textbox", name="Search").press_sequentially("facilitator")
    # The results follow each key: the first one shown may be for "f" (its link says so: `?h=f`), not the word.
    page.wait_for_function("document.querySelector('.md-search-result__item a')?.href.includes('h=facilitator')",
                           timeout=30_000)
    assert "workshop.html" in page.locator(".md-search-result__item a").first.get_attribute("href")
