"""Playing missions through the page's view code: what earns a star, what is kept, what a player is told.

Each request is what `static/bridge.js` sends: the hash, the controls changed (`live` while a slider is
still moving), an action, and what the browser keeps for the player (`progress`, `memo`). The answer's
`progress` and `memo` are what the browser keeps next.
"""

import re

from lab.page.view import handle
from missions import MISSIONS, find_mission
from model import Scenario

UNLOCKED = {m.id: 3 for m in MISSIONS}  # every mission open


def play(view, **request):
    """The next request from the page after `view`, carrying what the browser keeps."""
    return handle({"hash": view["hash"], "progress": view["progress"], "memo": view["memo"], **request})


def choose(mission_id, progress=None, hash_=""):
    return handle({"hash": hash_, "progress": progress or {},
                   "action": {"type": "select_mission", "mission": mission_id}})


def verdict_stars(view):
    html = view["patches"]["dom"]["#missions"]["html"]
    return int(re.search(r'class="verdict[^"]*"[^>]*data-stars="(\d)"', html).group(1))


def panel(view):
    return view["patches"]["dom"]["#missions"]["html"]


# -- point 2: choosing a mission loads its broken start; only play earns stars ----------------------

def test_choosing_a_mission_loads_its_broken_start_and_earns_nothing():
    view = choose("cache-on")  # from the default setup, which would pass this mission at once
    assert view["hash"] == "fleet.cache=false&mission=cache-on&guess=ask"  # its first play asks for a guess first
    assert view["progress"] == {} and "First, a guess" in panel(view)
    view = play(view, action={"type": "skip_predict"})
    assert view["hash"] == "fleet.cache=false&mission=cache-on"
    assert view["progress"] == {} and verdict_stars(view) == 0
    assert "Not passed yet" in panel(view)


def test_a_mission_opened_from_the_last_missions_fix_starts_broken_too():
    fixed = "router.kind=cache_aware&mission=timestamp"  # mission 2's fix, which gave mission 3 two stars
    view = choose("round-robin", {"cache-on": 3, "timestamp": 3}, fixed)
    view = play(view, action={"type": "skip_predict"})
    start = find_mission("round-robin").start
    assert view["hash"].startswith("fleet.replicas=8&router.kind=round_robin")
    assert Scenario().with_text(dict(p.split("=") for p in view["hash"].split("&") if not p.startswith("mission"))) == start
    assert view["progress"] == {"cache-on": 3, "timestamp": 3} and verdict_stars(view) == 0


def test_stars_count_only_for_setups_reached_by_controls_after_the_start_was_loaded():
    link = handle({"hash": "mission=cache-on&fleet.replicas=2"})  # a shared link to a three-star setup
    assert verdict_stars(link) == 3 and link["progress"] == {}  # shown, not counted
    assert "Load mission setup" in panel(link) and "earn stars" in panel(link)
    nudged = play(link, controls={"ctl:fleet.replicas": 3})  # a control change, but not from the start
    assert nudged["progress"] == {}
    loaded = play(nudged, action={"type": "load_mission"})
    assert loaded["hash"] == "fleet.cache=false&mission=cache-on" and loaded["progress"] == {}
    fixed = play(loaded, controls={"ctl:fleet.cache": True})
    assert fixed["progress"] == {"cache-on": 1}
    reloaded = play(fixed)  # a page reload: the same hash, nothing changed, still in play
    assert reloaded["progress"] == {"cache-on": 1}
    assert play(reloaded, controls={"ctl:fleet.replicas": 2})["progress"] == {"cache-on": 3}


def test_there_is_a_way_back_to_the_setup_before_the_mission():
    mine = handle({"hash": "fleet.replicas=6&router.kind=cache_aware"})
    view = play(mine, action={"type": "select_mission", "mission": "cache-on"})
    assert 'data-action="go_back"' in panel(view)
    back = play(view, action={"type": "go_back"})
    assert back["hash"] == "fleet.replicas=6&router.kind=cache_aware"


# -- point 3: only settled setups are scored; the best one can be replayed --------------------------

def burst_with_three_replicas_cache_aware():
    view = choose("burst", UNLOCKED | {"burst": 0})
    view = play(view, controls={"ctl:fleet.replicas": 3})
    view = play(view, controls={"ctl:router.kind": "cache_aware"})
    assert view["progress"]["burst"] == 2
    return view


def test_values_a_slider_passes_through_while_it_moves_earn_no_star():
    view = burst_with_three_replicas_cache_aware()
    moving = play(view, controls={"ctl:router.spill_threshold_s": 0.2}, live=True)  # mid-drag, through 0.2
    assert verdict_stars(moving) == 3  # the charts and the verdict follow the drag...
    assert moving["progress"]["burst"] == 2  # ...but nothing is kept
    released = play(moving, controls={"ctl:router.spill_threshold_s": 0.6})  # let go at 0.6
    assert verdict_stars(released) == 2 and released["progress"]["burst"] == 2
    settled = play(released, controls={"ctl:router.spill_threshold_s": 0.2})  # a key press settles at once
    assert settled["progress"]["burst"] == 3


def test_the_setup_that_earned_the_best_stars_is_shown_and_can_be_replayed():
    view = burst_with_three_replicas_cache_aware()
    best = play(view, controls={"ctl:router.spill_threshold_s": 0.2})
    worse = play(best, controls={"ctl:router.spill_threshold_s": 0.6})
    assert worse["memo"]["best"]["burst"] == "fleet.replicas=3&router.kind=cache_aware&router.spill_threshold_s=0.2" \
        "&events=burst@60+30x5"
    html = panel(worse)
    assert "Replay my best" in html and "Spill threshold 0.2 s" in html
    replayed = play(worse, action={"type": "replay_best", "mission": "burst"})
    assert replayed["hash"] == worse["memo"]["best"]["burst"] + "&mission=burst" and verdict_stars(replayed) == 3
    assert replayed["progress"]["burst"] == 3


# -- point 8: inputs and small things ---------------------------------------------------------------

def test_out_of_range_event_inputs_are_said_and_shown_as_used():
    view = handle({"hash": "", "action": {"type": "add_event", "kind": "burst",
                                          "inputs": {"evt:at": 500, "evt:duration": -5, "evt:factor": None}}})
    assert view["hash"] == "events=burst@179+1x3"
    said = " ".join(view["notices"])
    assert "Start (s) 500" in said and "179" in said
    assert "Lasting (s) -5" in said and "Burst ×" in said and "not a number" in said
    bokeh = view["patches"]["bokeh"]
    assert (bokeh["evt:at"]["value"], bokeh["evt:duration"]["value"], bokeh["evt:factor"]["value"]) == (179, 1, 3)


def test_slider_values_reach_the_url_rounded_to_the_controls_step():
    view = handle({"hash": "", "controls": {"ctl:fleet.memory_gb": 3.9999999999999996,
                                            "ctl:traffic.session_rate": 2.7500000000000004}})
    assert view["hash"] == "traffic.session_rate=2.75"
    view = handle({"hash": "router.kind=cache_aware", "controls": {"ctl:router.spill_threshold_s": 0.30000000000000004}})
    assert view["hash"] == "router.kind=cache_aware&router.spill_threshold_s=0.3"


def test_reset_progress_asks_before_it_forgets_every_star():
    progress = {"cache-on": 3, "timestamp": 2}
    view = handle({"hash": "", "progress": progress})
    assert 'data-action="ask_reset"' in panel(view) and 'data-action="reset_progress"' not in panel(view)
    asked = play(view, action={"type": "ask_reset"})
    assert asked["progress"] == progress and "forget" in panel(asked).lower()
    assert 'data-action="reset_progress"' in panel(asked) and 'data-action="keep_progress"' in panel(asked)
    kept = play(asked, action={"type": "keep_progress"})
    assert kept["progress"] == progress and 'data-action="reset_progress"' not in panel(kept)
    gone = play(asked, action={"type": "reset_progress"})
    assert gone["progress"] == {} and gone["memo"]["best"] == {}


def test_a_locked_mission_tells_a_facilitator_how_to_open_every_mission():
    view = handle({"hash": "mission=monday"})
    assert "mission" not in view["hash"] and "unlock=all" in view["notices"][0]
    assert "unlock=all" in panel(view)


def test_players_see_labels_never_keys():
    view = handle({"hash": "mission=cache-on&router.kind=cache_aware"})  # a fixed key changed, by a link
    assert "router.kind" not in panel(view) and "Router" in panel(view)
    refused = handle({"hash": "", "controls": {"ctl:fleet.replicas": 900}})
    assert not any("fleet.replicas" in n for n in refused["notices"]) and "Replicas" in refused["notices"][0]
