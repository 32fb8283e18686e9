"""What a newcomer read wrong at first glance (issue 29, findings 2 and 6), checked on the view's answers."""

import re

from lab.page.controls import CONTROLS, for_people
from lab.page.missionview import GUESS_INPUT
from lab.page.view import handle
from missions import MISSIONS, find_mission
from model import PRESETS, Scenario


def asking(mission_id):
    """The answer while the mission waits for the player's guess (its start just loaded)."""
    return handle({"hash": "unlock=all", "action": {"type": "select_mission", "mission": mission_id}})


def test_mission_ten_does_not_show_the_figure_it_asks_to_be_guessed():
    mission = find_mission("stale-router")
    assert mission is not None and mission.predict is not None and mission.predict.figure == "router_overestimate"
    answer = asking(mission.id)
    assert answer["patches"]["dom"]["#predict"]["hidden"] is False  # it is asking
    info = answer["patches"]["dom"]["#router-info"]["html"]
    assert not re.search(r"\d+\.\d%", info), info
    assert "held back until you check your guess" in info
    guessed = handle({"hash": answer["hash"], "action": {"type": "predict", "inputs": {GUESS_INPUT: 0.3}},
                      "progress": answer["progress"], "memo": answer["memo"]})
    assert "54.9%" in guessed["patches"]["dom"]["#router-info"]["html"]  # shown once the guess is in


def test_the_guess_slider_has_a_short_title_and_never_starts_at_the_answer():
    for mission in MISSIONS:
        if mission.trace:
            continue  # its start waits for its traffic (tests/common/test_tracemission.py)
        slider = asking(mission.id)["patches"]["bokeh"][GUESS_INPUT]
        assert slider["title"].startswith("Your guess: ") and len(slider["title"]) <= 30  # the value stays in sight
        assert slider["value"] == mission.predict.lo  # never within a step of the truth (the low end never is)


def test_every_menu_option_has_a_help_line_after_its_colon():
    for c in CONTROLS:
        if c.widget != "select":
            continue
        for option in c.options:
            try:
                scenario = Scenario().with_text({c.key: option})
            except ValueError:
                continue
            said = c.help(scenario).partition(": ")[2]
            assert said.strip(), (c.key, option)


def test_messages_name_controls_and_presets_as_people_read_them():
    said = for_people("split: 1 prefill and 2 decode replicas (fleet.replicas=4 is not used)")
    assert said == "split: 1 prefill and 2 decode replicas (Replicas 4 is not used)"
    assert for_people("fleet.fetch=rdma is modelled in lab mode only") == "Fetch over RDMA is modelled in lab mode only"
    label = PRESETS["article_14b_h100"].label
    assert for_people(f"{label} (article_14b_h100) runs") == f"{label} runs"
    split = handle({"hash": "fleet.decode=true&fleet.prefill_replicas=1&fleet.decode_replicas=2"})
    notices = " ".join(split["notices"]) + split["patches"]["dom"]["#notices"]["html"]
    assert "Replicas 4 is not used" in notices and "fleet.replicas" not in notices


def test_a_mission_that_opens_early_says_after_which():
    html = handle({"hash": "unlock=all"})["patches"]["dom"]["#missions"]["html"]
    item = re.search(r'data-mission="real-traffic"[^>]*>(.*?)</button>', html)
    assert item is not None and "opens after 3" in item.group(1)
    assert "opens after" not in re.search(r'data-mission="fan-out"[^>]*>(.*?)</button>', html).group(1)


def test_labels_of_events_starting_together_go_on_rows_of_their_own():
    events = handle({"hash": "events=burst@60+30x3,surge@62+40,timestamp@150"})["patches"]["bokeh"]["src:events"]
    rows = events["data"]["label_y"]
    assert rows[0] != rows[1] and rows[2] == rows[0] == 1


SERVING = "fleet.decode=true&hardware.preset=codellama13b_a100&fleet.memory_gb=4"


def test_serving_modes_readout_says_when_its_last_turn_arrived():
    answer = handle({"hash": SERVING})
    readout = answer["patches"]["dom"]["#readout"]["text"]
    arrived = [float(t.replace(",", "")) for t in re.findall(r"<td>([\d,.]+) s</td>",
                                                              answer["patches"]["dom"]["#slowest"]["html"])]
    assert arrived and max(arrived) > 180  # turns that waited for their answers arrive after the 180 s
    last = float(re.search(r"the last arrived at ([\d,.]+) s", readout).group(1).replace(",", ""))
    assert "sessions starting in the first 180 s" in readout and max(arrived) <= last
    assert "requests in 180 s" in handle({"hash": ""})["patches"]["dom"]["#readout"]["text"]  # lab mode: as before


def test_the_load_strip_counts_the_wait_for_room_in_the_batch_beside_the_queued_work():
    answer = handle({"hash": SERVING})
    caption = answer["patches"]["dom"]["#cap-load"]["text"]
    work = float(re.search(r"longest queue was ([\d,.]+) s of work", caption).group(1).replace(",", ""))
    waited = float(re.search(r"waited up to ([\d,.]+) s", caption).group(1).replace(",", ""))
    p50 = float(answer["summary"]["ttft_p50_ms"]) / 1000
    assert work < p50 <= waited + 1  # the wait it names covers the median TTFT; the queued work does not


def test_axes_write_big_numbers_out_and_a_log_axis_thins_its_ticks():
    from bokeh.models import LogTicker, NumeralTickFormatter

    from lab.site.layout import figures as draw
    drawn = draw(handle({"hash": ""}), ("ttft", "memory", "dist"))
    for name in ("ttft", "memory"):  # 200,000 ms, not 2.000e+5
        assert isinstance(drawn[name].yaxis[0].formatter, NumeralTickFormatter)
    dist = drawn["dist"].xaxis[0]
    assert isinstance(dist.formatter, NumeralTickFormatter) and isinstance(dist.ticker, LogTicker)
