"""The page under the server's Content-Security-Policy: every control still works, nothing is refused.

A violation shows as a `securitypolicyviolation` event in the page (listened
for before any script runs) and as a console error (the `guarded` fixture
fails on those, the worker's included).
"""

import pytest
from conftest import READY, expected_metrics, metrics, wait_ready_with
from test_page import checkbox, number_input, slider

pytestmark = pytest.mark.browser

LISTEN = """
window.violations = [];
document.addEventListener('securitypolicyviolation', e =>
    window.violations.push(`${e.effectiveDirective} blocked ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));
"""


def press(page, label, key, fragment):
    handle = slider(page, label)
    handle.focus()
    handle.press(key)
    wait_ready_with(page, f"location.hash.includes({fragment!r})")


def toggle(page, label, fragment):
    checkbox(page, label).click()
    wait_ready_with(page, f"location.hash.includes({fragment!r})")
    checkbox(page, label).click()
    wait_ready_with(page, f"!location.hash.includes({fragment!r})")


def test_every_control_works_under_the_policy(page, server, guarded):
    _, guard, _ = guarded
    page.add_init_script(LISTEN)
    response = page.goto(server["url"])
    policy = response.headers["content-security-policy"]
    assert "'unsafe-eval' 'wasm-unsafe-eval' 'sha256-" in policy and "frame-ancestors 'none'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    page.wait_for_function(READY, timeout=60_000)

    page.get_by_role("combobox", name="Router").first.select_option(label="Cache-aware")
    wait_ready_with(page, "location.hash.includes('router.kind=cache_aware')")
    press(page, "Replicas", "ArrowRight", "fleet.replicas=5")
    press(page, "Prefix memory", "ArrowLeft", "fleet.memory_gb=3.75")
    press(page, "Spill threshold", "ArrowRight", "router.spill_threshold_s=1.1")
    press(page, "New sessions per second", "ArrowRight", "traffic.session_rate=2.25")
    toggle(page, "Prefix cache", "fleet.cache=false")
    checkbox(page, "Never spill (always follow the cache)").click()  # (unchecking it does nothing yet: view.py)
    wait_ready_with(page, "location.hash.includes('router.spill_threshold_s=off')")
    for label, fragment in (("Top", "dynamic_text=top"), ("Bottom", "dynamic_text=bottom")):
        page.get_by_role("button", name=label, exact=True).click()
        wait_ready_with(page, f"location.hash.includes({fragment!r})")
    page.get_by_role("button", name="None", exact=True).click()
    wait_ready_with(page, "!location.hash.includes('dynamic_text')")

    for label, value in (("Start (s)", "30"), ("Lasting (s)", "20"), ("Burst ×", "2")):
        box = number_input(page, label)
        box.fill(value)
        box.press("Enter")
    for button, fragment in (("Inject timestamp", "timestamp@30"), ("Tenant surge", "surge@30+20"),
                             ("Burst", "burst@30+20x2")):
        page.get_by_role("button", name=button, exact=True).click()
        wait_ready_with(page, f"location.hash.includes({fragment!r})")
    page.get_by_role("button", name="Remove Tenant surge, 30–50 s").click()
    wait_ready_with(page, "!location.hash.includes('surge@30')")

    page.locator('button[data-mission="cache-on"]').click()
    wait_ready_with(page, "location.hash.includes('mission=cache-on')")
    page.get_by_role("button", name="Load mission setup").click()
    wait_ready_with(page, "location.hash.includes('fleet.cache=false')")
    assert page.evaluate("window.violations") == []

    # The listener works and the policy is enforced: an injected inline script is refused.
    page.evaluate("() => { const s = document.createElement('script'); s.textContent = 'window.ran = 1';"
                  " document.body.appendChild(s); }")
    page.wait_for_function("window.violations.length === 1")
    assert page.evaluate("window.violations[0]").startswith("script-src-elem blocked inline")
    assert page.evaluate("window.ran") is None
    guard.errors[:] = [e for e in guard.errors if "Content Security Policy" not in e]  # the one we caused


def test_the_embed_view_works_framed_under_its_policy(guarded, server):
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
    embedded.get_by_role("combobox", name="Router").select_option(label="Round robin")
    embedded.wait_for_function(f"({READY}) && location.hash.includes('round_robin')", timeout=30_000)
    assert metrics(embedded) == expected_metrics("router.kind=round_robin")  # the frame follows its own controls
    assert embedded.evaluate("window.violations") == []
