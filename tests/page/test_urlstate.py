"""Reading and writing the URL hash: order of pairs, events that depend on the duration."""

import itertools

import pytest

from lab.page.urlstate import read_hash, write_hash
from model import Event


def test_events_are_read_after_the_duration_they_must_fit_in():
    state = read_hash("events=burst@200+30x2&duration_s=300")  # the burst only fits a 300 s run
    assert state.scenario.duration_s == 300.0
    assert state.scenario.events == (Event(kind="burst", at_s=200.0, duration_s=30.0, factor=2.0),)
    assert state.notices == ()


def test_an_event_past_a_shorter_duration_is_dropped_whichever_comes_first():
    for text in ("events=timestamp@100&duration_s=60", "duration_s=60&events=timestamp@100"):
        state = read_hash(text)
        assert state.scenario.duration_s == 60.0 and state.scenario.events == ()
        assert state.notices == ("Ignored event 'timestamp@100': Starts at 100 s; use a start from 0 to below "
                                 "duration_s (60).",)


PAIRS = ["events=surge@250+40,timestamp@280", "duration_s=300", "fleet.replicas=8", "mission=burst"]


@pytest.mark.parametrize("order", list(itertools.permutations(PAIRS)), ids=lambda o: "&".join(p[:6] for p in o))
def test_the_order_of_pairs_does_not_matter(order):
    state = read_hash("&".join(order))
    assert state.notices == ()
    assert write_hash(state.scenario, state.page) == (
        "duration_s=300&fleet.replicas=8&events=surge@250+40,timestamp@280&mission=burst")
