"""Every mission's hints, checked against the mission's own sweep (lab/data/mission-sweeps.json).

A hint declares the setup its words point to (`Hint.sets`, keys on the
mission's start) and what that setup improves (`Hint.better`). Read off the
shipped sweep, with no run: that setup is one of the swept ones, it improves
what the hint promises over the broken start, and all the mission's hints
applied together (a later hint's value for a key over an earlier one's) earn
at least one star. The words must say what the setup does: a key a hint sets
for the first time is named by its control, and "take away", "lower",
"tighten" or "shorten" go down, "add" or "raise" go up (said right before
the control's name, or anywhere in a hint that changes one number).
"""

import json
import math
import re

import pytest

from lab.page.controls import CONTROLS, control_of
from lab.page.figures import FIGURES as CHARTS
from lab.site.missionsweep import SHIPPED
from missions import MISSIONS
from missions.scoring import BETTER, Hint

SWEEPS = {d["id"]: d for d in json.loads(SHIPPED.read_text(encoding="utf-8"))["missions"]}
DOWN = ("take away", "lower", "tighten", "shorten")
UP = ("add ", "raise")
CHART_TITLES = sorted((f.title for f in CHARTS.values()), key=len, reverse=True)


def row(mission, sets):
    """The swept row of the start with `sets` applied (the start's own when `sets` changes nothing)."""
    d = SWEEPS[mission.id]
    wanted = {**d["start"]["settings"], **dict(sets)}
    found = [r for r in [d["start"], *d["setups"]] if r["settings"] == wanted]
    assert found, f"{mission.id}: no swept setup has {wanted}; a hint must point into the mission's grid"
    return found[0]


def improves(better, now, start):
    if better == "stars":
        return now["stars"] > start["stars"]
    assert better in now["figures"], f"the sweep keeps no {better}; promise stars or one of {sorted(now['figures'])}"
    return BETTER[better] * now["figures"][better] > BETTER[better] * start["figures"][better]


def number(text):
    return math.inf if text == "off" else float(text)


def names(text, key):
    """Whether the hint's text names the control of `key` (its short words, or its label without a unit)."""
    control = control_of(key)
    assert control is not None
    label = re.sub(r"\s*\(.*\)$", "", control.label)
    return control.words.lower() in text.lower() or label.lower() in text.lower()


def saying(text, key, words, keys):
    """Whether `text` moves `key` the way of `words`: right before its control's name, or anywhere when the hint
    changes only this one number."""
    control = control_of(key)
    assert control is not None
    low = text.lower()
    near = any(re.search(rf"{re.escape(w.strip())}\s+(the\s+)?{re.escape(control.words.lower())}", low) for w in words)
    return near or (keys == 1 and any(w in low for w in words))


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_each_hint_moves_the_score_the_way_it_promises_and_all_together_earn_a_star(mission):
    start = SWEEPS[mission.id]["start"]
    together: dict[str, str] = {}
    for hint in mission.hints:
        if not hint.sets:
            continue
        now = row(mission, hint.sets)
        assert improves(hint.better, now, start), (
            f"{mission.id}: {hint.text!r} points to {dict(hint.sets)}, which does not improve {hint.better} over "
            f"the start ({now['stars']} stars, {now['figures']} against {start['stars']}, {start['figures']})")
        together.update(hint.sets)
    assert together, f"{mission.id}: no hint points to a setup"
    assert row(mission, together.items())["stars"] >= 1, f"{mission.id}: all hints together, {together}, earn nothing"


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_a_hint_says_what_its_setup_changes(mission):
    start = SWEEPS[mission.id]["start"]["settings"]
    seen: set[str] = set()
    for hint in mission.hints:
        text = hint.text
        new = [key for key, _ in hint.sets if key not in seen]
        for key in new:
            assert names(text, key), f"{mission.id}: {text!r} sets {key} without naming its control"
        numeric = [(key, value) for key, value in hint.sets if key in new and re.fullmatch(r"[\d.]+|off", value)
                   and re.fullmatch(r"[\d.]+|off", start[key])]
        for key, value in numeric:
            if saying(text, key, DOWN, len(numeric)):
                assert number(value) < number(start[key]), f"{mission.id}: {text!r} says down, sets {key}={value}"
            if saying(text, key, UP, len(numeric)):
                assert number(value) > number(start[key]), f"{mission.id}: {text!r} says up, sets {key}={value}"
        seen |= set(new)


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_a_hint_that_sets_nothing_names_no_control(mission):
    words = [c.words for c in CONTROLS] + [c.label for c in CONTROLS]
    for hint in mission.hints:
        if hint.sets:
            continue
        text = hint.text
        for title in CHART_TITLES:  # chart titles may hold a control's words ("Prefix cache hit rate")
            text = text.replace(title, "")
        named = [w for w in words if re.search(rf"\b{re.escape(w)}\b", text)]
        assert not named, f"{mission.id}: {hint.text!r} names {named} but points to no setup"


def test_a_hint_promises_stars_or_a_figure():
    with pytest.raises(ValueError):
        Hint("Try the Router.", (("router.kind", "cost"),), "happiness")
