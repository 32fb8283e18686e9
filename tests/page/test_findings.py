"""Issue 29's findings in the view code: what a mission shows while it asks for a guess, where its slider starts,
and why a mission opens out of order."""

import html
import json
import re

import pytest
from helpers import ROOT, TRACES

import lab.page.view as view
from lab.common.tracemission import BytesSource, mission_sources
from lab.page.controls import CONTROLS
from lab.page.missionview import GUESS_INPUT
from lab.page.urlstate import write_hash
from missions import MISSIONS, find_mission
from model import PRESETS

TRUTH = {d["id"]: d["predict"]["truth"]
         for d in json.loads((ROOT / "lab" / "data" / "mission-sweeps.json").read_text())["missions"]}


def opened(mission, **page):
    return view.handle({"hash": write_hash(mission.start, {"mission": mission.id, "unlock": "all", **page})},
                       mission_sources())


def everything_said(answer):
    """Every text and HTML the answer puts on the page, and every Bokeh title."""
    dom = [str(patch.get(k, "")) for patch in answer["patches"]["dom"].values() for k in ("text", "html")]
    return " ".join(dom + [str(p.get("title", "")) for p in answer["patches"]["bokeh"].values()])


def test_mission_10_asking_its_guess_shows_the_share_nowhere_until_it_is_checked():
    mission = find_mission("stale-router")
    shown = f"{TRUTH[mission.id]:.1%}"
    asking = opened(mission, guess="ask")
    assert shown not in everything_said(asking)
    assert "shows once you check your guess" in asking["patches"]["dom"]["#router-info"]["html"]
    assert shown in opened(mission)["patches"]["dom"]["#router-info"]["html"]  # no guess asked: said at once


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_a_guess_left_where_its_slider_starts_is_never_close_to_the_truth(mission):
    p = mission.predict
    slider = opened(mission, guess="ask")["patches"]["bokeh"][GUESS_INPUT]
    assert (slider["start"], slider["end"], slider["step"]) == (p.lo, p.hi, p.step)
    assert abs(slider["value"] - TRUTH[mission.id]) >= 3 * p.step, "an untouched guess is nearly right"
    assert slider["title"] in ("Your guess", "Your guess (ms)")  # short: the value beside it shows


def test_a_mission_that_opens_out_of_order_says_why_and_the_one_that_opens_it_says_so():
    def detail(mission_id):
        return opened(find_mission(mission_id))["patches"]["dom"]["#missions"]["html"].split("mission-detail")[1]

    assert "It opens early, once 3. Round robin spreads the memory thin has a star" in detail("real-traffic")
    assert "It opens early" not in detail("hot-tenant")
    rr = find_mission("round-robin")
    passed = view.handle({"hash": write_hash(rr.start.with_text({"router.kind": "cache_aware"}),
                                             {"mission": rr.id, "unlock": "all"})})
    said = passed["patches"]["dom"]["#missions"]["html"]
    assert ("A star here opens 4. One hot tenant, one hot replica; 13. Real traffic, fewest replicas (it builds only "
            "on this one).") in said


def test_serving_mode_says_its_turns_keep_arriving_after_the_window_and_lab_mode_says_what_it_did():
    served = view.handle({"hash": "fleet.decode=true"})
    last = max(float(t) for t in re.findall(r"<td>([\d.,]+) s</td>", served["patches"]["dom"]["#slowest"]["html"]))
    readout = served["patches"]["dom"]["#readout"]["text"]
    said = float(re.search(r"the last arrived at ([\d,.]+) s", readout).group(1).replace(",", ""))
    assert "sessions that started in the first 180 s" in readout and last <= said and said > 180
    lab = view.handle({"hash": ""})["patches"]["dom"]["#readout"]["text"]
    assert re.match(r"[\d,]+ requests in 180 s \(about [\d.]+ per second\);", lab)


def test_a_serving_run_that_waits_for_kv_memory_says_so_beside_its_queued_work():
    answer = view.handle({"hash": "fleet.decode=true&hardware.preset=codellama13b_a100&fleet.memory_gb=4"})
    caption = answer["patches"]["dom"]["#cap-load"]["text"]
    queued = float(re.search(r"The longest queue was ([\d,.]+) s of work", caption).group(1).replace(",", ""))
    waited = float(re.search(r"the median request waited ([\d,.]+) s", caption).group(1).replace(",", ""))
    ttft_p50_s = answer["summary"]["ttft_p50_ms"] / 1000
    assert queued < ttft_p50_s / 2  # the queued prefill alone cannot explain the wait ...
    assert ttft_p50_s * 0.9 <= waited <= ttft_p50_s  # ... the wait for room in KV memory does
    assert "counts prefill work only" in caption


def test_labels_of_events_that_start_together_go_on_lines_of_their_own():
    events = view.handle({"hash": "events=surge@40+100,burst@40+30x3,timestamp@45,burst@120+10x2"})
    data = events["patches"]["bokeh"]["src:events"]["data"]
    y = dict(zip(zip(data["label"], data["left"]), data["y"], strict=True))
    assert len({y[("Tenant surge", 40)], y[("Burst", 40)], y[("Timestamp at the top", 45)]}) == 3  # close: one line each
    assert y[("Burst", 120)] == max(data["y"])  # far from the others: back on the first line
    assert all(0.5 < v <= 1 for v in data["y"])


@pytest.mark.parametrize("control", [c for c in CONTROLS if c.widget == "select"], ids=lambda c: c.key)
def test_a_menus_help_line_says_something_about_every_choice(control):
    for option in control.options:
        answer = view.handle({"hash": f"{control.key}={option}"})
        line = html.unescape(answer["patches"]["bokeh"][control.help_name]["text"])
        assert line and not line.rstrip().endswith(":") and line.split(": ", 1)[-1].strip(), (option, line)


SHOWN_NAMES = sorted({c.key for c in CONTROLS if "." in c.key} | (set(PRESETS) - {"lab"}), key=len, reverse=True)
INTERNAL = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in SHOWN_NAMES) + r")(?![\w])")


def page_words(answer):
    """What the answer writes on the page for people to read: texts, HTML without its tags and code, notices."""
    out = list(answer["notices"])
    for patch in answer["patches"]["dom"].values():
        for k in ("text", "html"):
            if k in patch:
                out.append(html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<code>.*?</code>", "", str(patch[k])))))
    return out


@pytest.mark.parametrize("hash_", [
    "fleet.decode=true&fleet.prefill_replicas=1&fleet.decode_replicas=2",  # the split's note
    "fleet.prefill_replicas=1&fleet.decode_replicas=1",  # split keys in lab mode
    "fleet.decode=true&fleet.fetch=rdma&hardware.preset=article_14b_h100",  # fetch in serving mode
    "fleet.decode=true&hardware.preset=codellama13b_a100",  # serving mode's heading
    *(write_hash(m.start, {"mission": m.id, "unlock": "all"}) for m in MISSIONS),
])
def test_the_page_names_controls_and_presets_as_people_read_them_never_by_their_keys(hash_):
    said = [w for w in page_words(view.handle({"hash": hash_}, mission_sources())) if INTERNAL.search(w)]
    assert said == []


def test_your_own_trace_on_the_default_fleet_says_why_its_numbers_are_extreme():
    with open(TRACES / "conversation_trace.jsonl", "rb") as f:
        source = BytesSource("mine.jsonl", b"".join(next(f) for _ in range(1500)))
    answer = view.handle({"hash": "", "action": {"type": "trace", "name": source.name}}, {"user": source})
    said = html.unescape(re.sub(r"<[^>]+>", "", answer["patches"]["dom"]["#trace-summary"]["html"]))
    assert answer["summary"]["hit_rate"] < 0.05 and answer["summary"]["ttft_p50_ms"] > 10_000
    assert "longer than a replica's whole prefix cache (32,768 tokens in 4 GB)" in said
    assert "requests queue" in said and "up to 128 GB and 64 replicas" in said
    sliders = answer["patches"]["bokeh"]
    assert (sliders["ctl:fleet.memory_gb"]["end"], sliders["ctl:fleet.replicas"]["end"]) == (128, 64)
    roomy = view.handle({"hash": "fleet.memory_gb=1024&fleet.replicas=16&trace=mine.jsonl"}, {"user": source})
    assert "longer than a replica's whole prefix cache" not in roomy["patches"]["dom"]["#trace-summary"]["html"]
    lab = view.handle({"hash": answer["hash"], "action": {"type": "trace_off"}}, {"user": source})["patches"]["bokeh"]
    assert (lab["ctl:fleet.memory_gb"]["end"], lab["ctl:fleet.replicas"]["end"]) == (16, 16)  # the lab's chats
