"""The page under the server's Content-Security-Policy: it is enforced, and nothing the page does is refused.

A violation shows as a `securitypolicyviolation` event in the page (listened
for before any script runs, in the framed embed) and as a console error (the
guarded contexts of every browser test fail on those, the worker's included).
"""

import pytest
from conftest import READY, expected_metrics, metrics
from test_layout_page import serious_violations

pytestmark = pytest.mark.browser

LISTEN = """
window.violations = [];
document.addEventListener('securitypolicyviolation', e =>
    window.violations.push(`${e.effectiveDirective} blocked ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));
"""


def test_the_policy_is_enforced_on_the_page(fresh_lab, lab_guarded):
    """Every browser test's page is served under the policy, and a violation fails it: Chromium reports one as a
    console error (the worker's too), which the guarded context counts. So every control the browser tests use
    works under the policy; here the policy is shown to be enforced, by an inline script it must refuse. (What
    the policy says is checked from its headers, tests/server/test_server_hostile.py.)"""
    page, (_, guard, _) = fresh_lab, lab_guarded
    page.evaluate(LISTEN)
    page.evaluate("() => { const s = document.createElement('script'); s.textContent = 'window.ran = 1';"
                  " document.body.appendChild(s); }")
    page.wait_for_function("window.violations.length === 1")
    assert page.evaluate("window.violations[0]").startswith("script-src-elem blocked inline")
    assert page.evaluate("window.ran") is None
    guard.errors[:] = [e for e in guard.errors if "Content Security Policy" not in e]  # the one we caused


def test_the_embed_view_works_framed_under_its_policy_with_no_serious_accessibility_violations(guarded, server):
    context, _, watch = guarded
    context.add_init_script(LISTEN)  # in every frame, before its scripts
    host = watch(context.new_page())
    host.set_content("<!doctype html><title>An article</title><iframe src='about:blank'></iframe>")
    url = server["url"] + "embed.html"
    with (host.expect_event("framenavigated", lambda f: f.url == url) as navigated,
          host.expect_response(url) as answer):
        host.evaluate("url => { document.querySelector('iframe').src = url; }", url)
    assert "frame-ancestors" not in answer.value.headers["content-security-policy"]
    embedded = navigated.value
    embedded.wait_for_function(READY, timeout=60_000)
    assert metrics(embedded) == expected_metrics()
    assert serious_violations(embedded) == []  # axe-core, as on index.html in test_layout_page.py
    embedded.get_by_role("combobox", name="Router").select_option(label="Round robin")
    embedded.wait_for_function(f"({READY}) && location.hash.includes('round_robin')", timeout=30_000)
    assert metrics(embedded) == expected_metrics("router.kind=round_robin")  # the frame follows its own controls
    assert embedded.evaluate("window.violations") == []
