"""The lab page in Chromium, served by `prefix-lab serve`, offline.

All of them share the session's booted page (`fresh_lab`). A first paint, a boot that fails and an
embed are checked in test_layout_page.py, test_resilience_page.py and test_embeds_page.py.
"""

import pytest
from conftest import ARTIFACTS, COUNT_VIEWS, READY, expected_metrics, metrics, open_lab, reset_lab, wait_ready_with
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def checkbox(page, label):
    """The checkbox named `label` for assistive technology (the bridge names Bokeh's checkboxes, once Bokeh has
    drawn them: in a section just opened, a moment after it opens)."""
    box = page.get_by_role("checkbox", name=label, exact=True)
    expect(box, f"no single checkbox named {label!r}").to_have_count(1)
    return box


def slider(page, label):
    """The slider handle under the Bokeh title `label: value`."""
    for handle in page.locator(".noUi-handle").all():
        title = handle.evaluate("e => e.getRootNode().querySelector('.bk-slider-title')?.textContent || ''")
        if title.startswith(label):
            return handle
    raise AssertionError(f"no slider titled {label!r}")


def number_input(page, label):
    """The Bokeh spinner input titled `label`."""
    for box in page.locator("input.bk-input").all():
        if box.evaluate("e => e.getRootNode().querySelector('label')?.textContent") == label:
            return box
    raise AssertionError(f"no number input titled {label!r}")


def test_page_loads_from_its_own_origin_and_shows_the_default_numbers(fresh_lab, lab_guarded):
    page, (_, guard, _) = fresh_lab, lab_guarded
    assert metrics(page) == expected_metrics()
    assert page.locator("#status").inner_text().startswith("Ready")
    assert any(u.endswith("pyodide.asm.wasm") for u in guard.seen), "worker requests were not routed"
    assert any("/wheels/prefix_lab-" in u for u in guard.seen)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "lab.png"), full_page=True)


def test_controls_change_the_numbers_to_what_the_cli_gives(fresh_lab):
    page = fresh_lab
    page.get_by_role("combobox", name="Router").select_option(label="Cache-aware")
    wait_ready_with(page, "location.hash.includes('router.kind=cache_aware')")
    assert metrics(page) == expected_metrics("router.kind=cache_aware")

    handle = slider(page, "Replicas")
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    wait_ready_with(page, "location.hash.includes('fleet.replicas=6')")
    assert metrics(page) == expected_metrics("router.kind=cache_aware", "fleet.replicas=6")

    checkbox(page, "Prefix cache").click()
    wait_ready_with(page, "location.hash.includes('fleet.cache=false')")
    expected = expected_metrics("router.kind=cache_aware", "fleet.replicas=6", "fleet.cache=false")
    assert metrics(page) == expected and expected["hit_rate"] == "0.0"
    assert page.locator('[data-metric="hit_rate"]').inner_text() == "0.0%"


def test_spill_threshold_is_only_active_for_cache_aware(fresh_lab):
    page = fresh_lab
    handle = slider(page, "Spill threshold")
    assert handle.evaluate("e => e.closest('[disabled]') !== null || e.getRootNode().host.hasAttribute('disabled')"
                           " || e.getRootNode().querySelector('.noUi-target')?.hasAttribute('disabled')")
    page.get_by_role("combobox", name="Router").select_option(label="Cache-aware")
    wait_ready_with(page, "location.hash.includes('router.kind=cache_aware')")
    assert not handle.evaluate("e => e.getRootNode().querySelector('.noUi-target')?.hasAttribute('disabled')")


def test_events_can_be_injected_and_removed(fresh_lab):
    page = fresh_lab
    start = number_input(page, "Start (s)")
    start.fill("120")
    start.press("Enter")
    page.get_by_role("button", name="Tenant surge").click()
    wait_ready_with(page, "location.hash.includes('events=surge@120+60')")
    assert "Tenant surge, 120–180 s" in page.locator("#events-list").inner_text()
    assert metrics(page) == expected_metrics("events=surge@120+60")

    page.get_by_role("button", name="Inject timestamp").click()
    wait_ready_with(page, "location.hash.includes('timestamp@120')")
    assert page.locator("#events-list li").count() == 2
    with_both = metrics(page)
    assert float(with_both["hit_rate"]) < float(expected_metrics("events=surge@120+60")["hit_rate"])

    page.get_by_role("button", name="Remove Tenant surge, 120–180 s").click()
    wait_ready_with(page, "!location.hash.includes('surge')")
    assert metrics(page) == expected_metrics("events=timestamp@120")
    page.locator("#events-list button").click()
    wait_ready_with(page, "!location.hash.includes('events')")
    assert metrics(page) == expected_metrics()
    assert "No events" in page.locator("#events-list").inner_text()


def test_url_state_round_trips(fresh_lab):
    """A link's state is shown, written back in its own order, kept by a reload (which opens the page at the link
    as a new page would) and followed when a link is pasted."""
    fragment = "fleet.replicas=8&router.kind=cache_aware&dynamic_text=bottom&events=burst@60+30x3"
    page = reset_lab(fresh_lab, fragment)
    assert page.evaluate("location.hash") == "#" + fragment.replace("fleet.replicas=8&router.kind=cache_aware&dynamic_text=bottom",
                                                                    "dynamic_text=bottom&fleet.replicas=8&router.kind=cache_aware")
    expected = expected_metrics("fleet.replicas=8", "router.kind=cache_aware", "dynamic_text=bottom",
                                "events=burst@60+30x3")
    assert metrics(page) == expected
    assert page.get_by_role("combobox", name="Router").input_value() == "Cache-aware"
    assert slider(page, "Replicas").get_attribute("aria-valuenow") == "8"  # the exact value (issue 29: noUiSlider wrote one decimal)
    page.reload()
    page.wait_for_function(READY, timeout=60_000)
    assert metrics(page) == expected
    assert page.get_by_role("combobox", name="Router").input_value() == "Cache-aware"
    assert slider(page, "Replicas").get_attribute("aria-valuenow") == "8"
    page.evaluate("location.hash = 'fleet.replicas=3'")  # a pasted link, without reloading
    wait_ready_with(page, "location.hash === '#fleet.replicas=3'")
    assert metrics(page) == expected_metrics("fleet.replicas=3")


def test_garbage_in_the_hash_falls_back_field_by_field_with_a_notice(fresh_lab):
    page = reset_lab(fresh_lab, "fleet.replicas=banana&router.kind=cache_aware&colour=red&fleet.memory_gb=-2&events=burst@9999,timestamp@100&%%%")
    notices = page.locator("#notices").inner_text()
    assert "fleet.replicas=banana" in notices and "Using 4" in notices
    assert "unknown setting 'colour'" in notices
    assert "fleet.memory_gb=-2" in notices
    assert "burst@9999" in notices
    assert page.evaluate("location.hash") == "#router.kind=cache_aware&events=timestamp@100"
    assert metrics(page) == expected_metrics("router.kind=cache_aware", "events=timestamp@100")


def test_a_url_edited_while_the_simulator_is_busy_wins(fresh_lab):
    page = fresh_lab
    page.evaluate("""() => {
        window.prefixLab.changed('ctl:fleet.replicas', 7, 'value');  // in flight...
        location.hash = 'router.kind=round_robin';                   // ...when the URL is edited
    }""")
    wait_ready_with(page, "location.hash === '#router.kind=round_robin'")
    assert metrics(page) == expected_metrics("router.kind=round_robin")
    assert slider(page, "Replicas").get_attribute("aria-valuenow") == "4"


def test_reset_lab_leaves_the_shared_page_as_a_new_page_shows_it(fresh_lab):
    page = fresh_lab
    page.locator('button[data-mission="cache-on"]').click()  # some progress: one star
    page.get_by_role("button", name="Load mission setup").click()
    wait_ready_with(page, "location.hash.includes('fleet.cache=false')")
    checkbox(page, "Prefix cache").click()
    wait_ready_with(page, "!location.hash.includes('fleet.cache=false')")
    assert page.evaluate("localStorage.getItem('prefix-lab:progress')") == '{"cache-on":1}'
    page.locator('button[data-mission=""]').click()  # free play, where events are allowed
    wait_ready_with(page, "!location.hash.includes('mission')")
    start = number_input(page, "Start (s)")  # not in the hash: the reset must put it back itself
    start.fill("90")
    start.press("Enter")
    page.get_by_role("button", name="Tenant surge").click()
    wait_ready_with(page, "location.hash.includes('events=surge@90+60')")
    page.evaluate("window.prefixLab.changed('ctl:fleet.replicas', 900, 'value')")  # refused, with a notice
    wait_ready_with(page, "document.querySelector('#notices').textContent.includes('Replicas: 900')")

    reset_lab(page)
    assert page.evaluate("location.hash") == ""
    assert page.evaluate("localStorage.length") == 0
    assert metrics(page) == expected_metrics()
    assert page.locator("#notices").inner_text().strip() == ""
    assert "No events" in page.locator("#events-list").inner_text()
    assert number_input(page, "Start (s)").input_value() == "60"
    assert page.locator('button[data-mission="cache-on"]').get_attribute("data-stars") == "0"
    assert page.locator('button[data-mission="timestamp"]').is_disabled()
    page.get_by_role("button", name="Tenant surge").click()  # the next event starts at the default again
    wait_ready_with(page, "location.hash === '#events=surge@60+60'")


NEVER_SPILL = "Never spill (always follow the cache)"


def test_never_spill_can_be_ticked_and_unticked(fresh_lab):
    """The never-spill switch (declared once in `lab.page.controls`) both ways; the hot-tenant mission is played
    with it in test_missions_page.py."""
    page = reset_lab(fresh_lab, "router.kind=cache_aware")
    box, handle = checkbox(page, NEVER_SPILL), slider(page, "Spill threshold")

    def disabled():
        return handle.evaluate("e => e.getRootNode().querySelector('.noUi-target').hasAttribute('disabled')")

    assert not box.is_checked() and not disabled()
    box.click()
    wait_ready_with(page, "location.hash.includes('router.spill_threshold_s=off')")
    assert box.is_checked() and disabled()
    box.click()
    wait_ready_with(page, "!location.hash.includes('spill_threshold_s')")  # back to the default, 1 s
    assert not box.is_checked() and not disabled()
    assert metrics(page) == expected_metrics("router.kind=cache_aware")


def test_a_slider_stepped_back_is_answered_from_the_pages_memory_with_the_clis_numbers(page, server):
    # a page of its own: the shared one's memo (the setups played) has changed with every test before
    page.add_init_script(COUNT_VIEWS)
    open_lab(page, server)
    handle = slider(page, "Replicas")
    handle.focus()
    for key, replicas in (("ArrowRight", 5), ("ArrowLeft", 4), ("ArrowRight", 5)):
        before = page.evaluate("window.__labViews")
        handle.press(key)
        wait_ready_with(page, f"window.__labViews > {before}")
        assert metrics(page) == expected_metrics(f"fleet.replicas={replicas}")
    # the third step asked what the first did: answered without the worker
    assert page.evaluate("window.prefixLab.timings.changes.at(-1).remembered") is True
