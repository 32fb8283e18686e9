"""The view's shortcuts give what the long way gives: an example button's `hidden` read from the scenario's text."""

import pytest

import lab.page.view as view
from lab.page.figures import FIGURES
from lab.page.urlstate import read_hash

EXAMPLES = {fig.name: fig.example for fig in FIGURES.values() if fig.example}


@pytest.mark.parametrize(("hash_", "held"), [
    ("", set()),
    ("fleet.decode=true", {"stall", "split"}),
    ("fleet.decode=true&events=burst@60+30x4", {"stall", "split", "queue"}),
    ("fleet.decode=true&events=burst@60.0+30x4.0", {"stall", "split", "queue"}),  # the same, written another way
    ("fleet.decode=true&events=burst@60+30x4,timestamp@10", {"stall", "split"}),  # one event more
    ("fleet.decode=true&events=burst@60+30x2", {"stall", "split"}),
    ("traffic.kind=agent&traffic.agent_fanout=8&fleet.memory_gb=16&router.kind=cache_aware&seed=3", {"fanout"}),
    ("traffic.kind=agent&traffic.agent_fanout=8&fleet.memory_gb=15.75&router.kind=cache_aware", set()),
])
def test_an_example_holds_by_its_text_exactly_when_loading_it_changes_nothing(hash_, held):
    scenario = read_hash(hash_).scenario
    text = scenario.to_text()
    for name, example in EXAMPLES.items():
        assert view._holds(text, example) == (scenario.with_text(dict(example)) == scenario) == (name in held), name
