"""Answers ahead of time (`lab.page.view.prefetch_json`): what it plans after a slider step, that a prefetched
answer is the one the page then gets, and that prefetching never changes what any later request returns."""

import json

import pytest

import lab.page.view as view
from lab.page.store import STORE

DRAG = {"hash": "fleet.replicas=3", "controls": {"ctl:fleet.replicas": 4}, "live": True, "action": None,
        "progress": {}, "memo": None}


def forget() -> None:
    """Every memo of the view emptied, as in a worker that has just booted."""
    STORE.clear()
    STORE.warm.clear()


def prefetch_all(request: dict) -> list[dict]:
    """Plan from `request` (answered just before), answer every planned request; the requests planned."""
    more = view.prefetch_json(json.dumps(request))
    planned = [json.loads(text) for text in STORE.warm]
    while more:
        more = view.prefetch_json()
    assert STORE.warm == []
    return planned


def following(request: dict, answer: str, value) -> dict:
    """The request the page sends after `answer` when the same slider moves on to `value`."""
    reply = json.loads(answer)
    return {**request, "controls": {name: value for name in request["controls"]}, "hash": reply["hash"],
            "progress": reply["progress"], "memo": reply["memo"]}


def test_a_slider_step_plans_the_next_step_the_way_it_went_first_then_the_step_back():
    forget()
    up = {**DRAG, "hash": "fleet.replicas=3", "controls": {"ctl:fleet.replicas": 4}}
    answer = view.handle_json(json.dumps(up))
    planned = prefetch_all(up)
    assert [p["controls"] for p in planned] == [{"ctl:fleet.replicas": 5}, {"ctl:fleet.replicas": 3}]
    assert all(p["hash"] == json.loads(answer)["hash"] and p["live"] is True for p in planned)

    down = {**DRAG, "hash": "fleet.memory_gb=4", "controls": {"ctl:fleet.memory_gb": 3.75}, "live": False}
    view.handle_json(json.dumps(down))
    assert [p["controls"] for p in prefetch_all(down)] == [{"ctl:fleet.memory_gb": 3.5}, {"ctl:fleet.memory_gb": 4.0}]


@pytest.mark.parametrize("request_", [
    {**DRAG, "controls": {"ctl:fleet.replicas": 16}},  # the slider's end: one neighbour only
    {**DRAG, "controls": {"ctl:fleet.replicas": 1}},
])
def test_a_slider_at_its_end_plans_the_one_step_it_can_take(request_):
    forget()
    view.handle_json(json.dumps(request_))
    value = request_["controls"]["ctl:fleet.replicas"]
    assert [p["controls"]["ctl:fleet.replicas"] for p in prefetch_all(request_)] == [15 if value == 16 else 2]


@pytest.mark.parametrize("request_", [
    {**DRAG, "controls": {"ctl:fleet.cache": False}},  # a switch, not a slider
    {**DRAG, "controls": {"ctl:fleet.replicas": 5, "ctl:fleet.memory_gb": 2}},  # two at once
    {**DRAG, "controls": None, "action": {"type": "pin"}},
    {**DRAG, "controls": None},
])
def test_anything_but_one_slider_moved_plans_nothing(request_):
    forget()
    view.handle_json(json.dumps(request_))
    assert view.prefetch_json(json.dumps(request_)) is False
    assert view.prefetch_json() is False


def test_a_request_not_answered_last_plans_nothing():
    forget()
    assert view.prefetch_json(json.dumps(DRAG)) is False  # its answer is not in the memo: no hash to go on


@pytest.mark.parametrize("request_", [
    DRAG,
    {**DRAG, "live": False},
    {**DRAG, "hash": "fleet.replicas=3&router.kind=cache_aware&traffic.session_rate=4"},
    {**DRAG, "hash": "mission=cache-on", "controls": {"ctl:fleet.memory_gb": 2.5}, "live": False,
     "progress": {"cache-on": 1}},
    {**DRAG, "hash": "fleet.decode=true", "controls": {"ctl:fleet.memory_gb": 6}},
    {**DRAG, "controls": {"ctl:crossover.queued": 4}},  # an article figure's slider
])
def test_a_prefetched_answer_is_the_answer_the_page_then_gets(request_):
    forget()
    answer = view.handle_json(json.dumps(request_))
    planned = prefetch_all(request_)
    assert planned
    name, value = next(iter(request_["controls"].items()))
    for plan in planned:
        step = plan["controls"][name] - value
        assert step != 0
        nxt = following(request_, answer, value + step)
        key = view._state_key(view._state_of(nxt, None))
        assert key in STORE.answers  # the page's next request finds it remembered
        remembered = view.handle_json(json.dumps(nxt))
        forget()
        assert remembered == view.handle_json(json.dumps(nxt))  # worked out from nothing remembered
        view.handle_json(json.dumps(request_))
        prefetch_all(request_)


def test_prefetching_never_changes_what_later_requests_return():
    """A drag back and forth, a settle, an action and a jump elsewhere: the same answers with and without
    answers ahead of time between the requests."""
    steps = [
        {"controls": {"ctl:fleet.replicas": 4}, "live": True},
        {"controls": {"ctl:fleet.replicas": 5}, "live": True},
        {"controls": {"ctl:fleet.replicas": 4}, "live": True},
        {"controls": {"ctl:fleet.replicas": 4}, "live": False},
        {"controls": None, "action": {"type": "pin"}},
        {"controls": {"ctl:traffic.session_rate": 2.25}, "live": True},
        {"controls": {"ctl:router.kind": "cache_aware"}, "live": False},
        {"controls": {"ctl:traffic.session_rate": 2.5}, "live": False},
    ]

    def play(ahead: bool) -> list[str]:
        forget()
        hash_, progress, memo, answers = "fleet.replicas=3", {}, None, []
        for step in steps:
            request = {"action": None, **step, "hash": hash_, "progress": progress, "memo": memo}
            text = view.handle_json(json.dumps(request))
            answers.append(text)
            reply = json.loads(text)
            hash_, progress, memo = reply["hash"], reply["progress"], reply["memo"]
            if ahead:
                prefetch_all(request)
        return answers

    assert play(ahead=True) == play(ahead=False)


def test_without_a_request_text_the_next_planned_answer_is_made_whatever_stands_for_none():
    """The worker's later calls pass no text: Pyodide hands a JavaScript null over as an object, not None."""
    forget()
    view.handle_json(json.dumps(DRAG))
    assert view.prefetch_json(json.dumps(DRAG)) is True
    assert view.prefetch_json(object()) is True  # one of the two answered
    assert len(STORE.warm) == 1
    assert view.prefetch_json(object()) is False
