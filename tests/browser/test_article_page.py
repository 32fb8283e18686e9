"""The article's figures on the page, played as a reader would: their own sliders by keyboard, the fan-out
example by its button, the article's two missions through their controls, and an embed of one figure."""

import re

import pytest
from conftest import READY, metrics, open_section
from test_missions_page import answered, choose, mission_button, press, verdict

from lab.page.figures import FIGURES
from missions import find_mission

pytestmark = pytest.mark.browser


def caption(page, name):
    return page.locator(f"#cap-{name}").inner_text()


def test_the_crossover_and_transfer_sliders_move_their_figures_and_leave_the_fleet_alone(fresh_lab):
    page = fresh_lab
    open_section(page, "article")  # the article's figures wait in a section a reader opens
    headline = metrics(page)
    assert "the warm GPU is faster" in caption(page, "crossover") and "80%" in caption(page, "crossover")
    queued = page.get_by_role("slider", name="Requests queued on the warm GPU")
    press(page, queued, "ArrowRight")  # 3 -> 4: the article's flip
    assert "crossover.queued=4" in page.evaluate("location.hash")
    assert "2.33 s" in caption(page, "crossover") and "the idle GPU is faster" in caption(page, "crossover")
    press(page, page.get_by_role("slider", name="RDMA (Gbps)"), "Home")  # the slowest fabric the slider offers
    assert "RDMA 50 Gbps" in caption(page, "transfer")
    assert metrics(page) == headline  # the fleet's numbers did not move
    gap = page.get_by_role("slider", name="Seconds between calls")
    press(page, gap, "End")  # 900 s: past the cache's five minutes
    assert "outlives the cache's 300 s" in caption(page, "api")


def test_the_fanout_example_loads_the_race_and_warming_first_wins_it(fresh_lab):
    page = fresh_lab
    open_section(page, "article")  # the article's figures wait in a section a reader opens
    assert "sends no fan-outs" in caption(page, "fanout")
    answered(page, lambda: page.get_by_role("button", name="Load the article's setup").click())
    assert "traffic.kind=agent" in page.evaluate("location.hash")
    raced = caption(page, "fanout")
    computed = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) (?:of [\d,]+ sub-calls computed|did)", raced)]
    assert len(computed) == 2 and computed[1] < computed[0], raced
    assert page.get_by_role("button", name="Load the article's setup").count() == 0  # loaded: nothing to offer


def test_the_articles_missions_are_played_through_their_controls(fresh_lab, server):
    page = fresh_lab
    answered(page, lambda: page.evaluate("location.hash = 'unlock=all'"))
    choose(page, 11, "Warm but busy, or idle and cold")
    router = page.get_by_role("combobox", name="Router")
    answered(page, lambda: router.select_option(label="Lowest estimated TTFT"))
    assert verdict(page) == (1, True)  # the cost router alone: every call where it finishes first
    answered(page, lambda: page.get_by_role("combobox", name="Fetch a prefix a peer holds over").select_option(
        label="RDMA"))
    press(page, page.get_by_role("slider", name="Replicas"), "ArrowRight")  # 4 -> 5
    assert verdict(page) == (3, True)

    choose(page, 12, "Eight calls, one cold prefix")
    warm = page.get_by_role("checkbox", name="Send the first sub-call alone, the rest at its first token")
    assert warm.is_visible() and not warm.is_checked()
    answered(page, lambda: warm.click())
    assert verdict(page) == (2, True)
    press(page, page.get_by_role("slider", name="Replicas"), "ArrowLeft")  # 4 -> 3
    assert verdict(page) == (3, True)


def test_an_embed_shows_one_figure_with_its_own_controls(page, server):
    page.goto(server["url"] + "embed.html?figure=crossover")
    page.wait_for_function(READY, timeout=60_000)
    shown = [el.get_attribute("data-figure") for el in page.locator("[data-figure]").all() if el.is_visible()]
    assert shown == ["crossover"]
    sliders = [s.get_attribute("aria-label") for s in page.get_by_role("slider").all() if s.is_visible()]
    assert len(sliders) == len(FIGURES["crossover"].controls)
    assert page.get_by_role("combobox", name="Router").is_visible() is False
    press(page, page.get_by_role("slider", name="Requests queued on the warm GPU"), "ArrowRight")
    assert "the idle GPU is faster" in caption(page, "crossover")
    named = page.context.new_page()
    named.goto(server["url"] + "embed.html?figure=headline,hit&controls=router.kind,bogus")
    named.wait_for_function(READY, timeout=60_000)
    assert named.get_by_role("combobox", name="Router").is_visible()
    assert named.get_by_role("slider", name="Replicas").is_visible() is False
    assert "'bogus'" in named.locator("#notices").inner_text()


def test_the_serving_figures_offer_serving_mode_then_show_the_stall_the_split_and_the_queue(fresh_lab):
    page = fresh_lab
    open_section(page, "article")  # the article's figures wait in a section a reader opens
    assert "turn on serving mode" in caption(page, "split")
    split = page.locator('[data-figure="split"]')
    answered(page, lambda: split.get_by_role("button", name="Turn on serving mode").click())
    assert "fleet.decode=true" in page.evaluate("location.hash")
    assert "Co-located: 100.0% and 42.8%, meeting the TTFT target" in caption(page, "split")
    assert "Split 1 + 3: 98.7% and 100.0%, meeting the gap target" in caption(page, "split")
    assert "42.8% of answers never paused longer than 100 ms" in caption(page, "stall")
    answered(page, lambda: page.get_by_role("button", name="Serving mode, with a burst").click())
    assert "burst" in page.evaluate("location.hash")
    assert "Nothing changed" not in caption(page, "queue") and "Longest prefix first" in caption(page, "queue")
    assert "steps of 2,048 tokens" in caption(page, "join")
    before = float(re.search(r"([\d.]+)% of answers never paused", caption(page, "stall")).group(1))
    press(page, page.get_by_role("slider", name="Tokens a step may compute"), "Home")  # the smallest chunk
    assert "steps of 256 tokens" in caption(page, "join")
    after = re.search(r"([\d.]+)% of answers never paused", caption(page, "stall"))
    assert after and float(after.group(1)) > before, caption(page, "stall")  # smaller chunks, shorter stalls


def test_a_mission_asks_for_a_guess_shows_it_beside_the_truth_gives_hints_in_order_and_places_the_setup(fresh_lab):
    page = fresh_lab
    answered(page, lambda: page.evaluate("location.hash = 'unlock=all'"))
    answered(page, lambda: mission_button(page, 3, "Round robin spreads the memory thin").click())
    assert page.locator("#predict").is_visible()
    assert "what share of prompt tokens" in page.locator("#predict-question").inner_text()
    assert page.locator('[data-metric="hit_rate"]').inner_text() == "?"  # held back until the guess
    guess = page.get_by_role("slider", name="Your guess")
    for _ in range(10):
        guess.press("ArrowLeft")  # 50% to 40%: the slider only holds the guess, nothing is sent
    # Each step is waited on by its own effect: an answer to the fetch of the missions' sweep may come between.
    page.get_by_role("button", name="Check my guess").click()
    page.wait_for_function(f"({READY}) && document.querySelector('.prediction[data-truth]') !== null",
                           timeout=30_000)
    said = page.locator(".prediction").inner_text()
    assert "You guessed 40.0%" in said and "it was 62.7%: 22.7 points low" in said, said
    assert page.locator('[data-metric="hit_rate"]').inner_text() == "62.7%" and not page.locator("#predict").is_visible()
    for n, name in ((1, "A hint"), (2, "Another hint")):
        page.get_by_role("button", name=name).click()
        page.wait_for_function(f"({READY}) && document.querySelectorAll('.hints li').length === {n}", timeout=30_000)
    assert page.locator(".hints li").all_inner_texts() == list(find_mission("round-robin").hints[:2])
    page.wait_for_function("document.querySelector('#landscape:not([hidden]) .standing, .standing') !== null",
                           timeout=30_000)  # the build's sweep, fetched once the mission opened
    assert page.locator("#landscape").is_visible()
    assert re.search(r"beats \d+% of the \d+ setups", page.locator(".standing").inner_text())


def test_the_tree_moves_through_time_by_keyboard(fresh_lab):
    page = fresh_lab
    open_section(page, "article")  # the article's figures wait in a section a reader opens
    end = page.locator("#cap-tree").inner_text()
    assert end.startswith("At ") and "The biggest branches: system prompt" in end
    moment = page.get_by_role("slider", name="Moment of the run the tree is drawn at, in seconds")
    press(page, moment, "ArrowLeft", times=2)
    moved = page.locator("#cap-tree").inner_text()
    assert moved != end and "tree_at=" in page.evaluate("location.hash")
    press(page, moment, "Home")
    assert "holds nothing" in page.locator("#cap-tree").inner_text()
