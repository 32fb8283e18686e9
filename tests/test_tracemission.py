"""The mission on replayed traffic: its broken start scores nothing, the known fixes earn one and three stars."""

from pathlib import Path

import pytest

from lab.tracemission import MISSION, ONE_STAR, REQUESTS, THREE_STARS, TRACE, play

PATH = Path(__file__).resolve().parents[2] / "shared" / "traces" / TRACE


def lines():
    with open(PATH, "rb") as f:
        yield from f


@pytest.mark.parametrize("changes, stars", [
    ({}, 0),
    (ONE_STAR, 1),
    ({"router.kind": "cache_aware", "fleet.replicas": "6"}, 2),
    (THREE_STARS, 3),
    ({"router.kind": "cache_aware", "fleet.replicas": "3"}, 0),  # one replica too few
    ({"router.kind": "least_loaded", "fleet.replicas": "16"}, 0),  # balancing load alone never gets there
    ({"router.kind": "cache_aware", "fleet.memory_gb": "1024"}, 0),  # memory is fixed
])
def test_the_mission_scores_as_designed(changes, stars):
    result, verdict = play(MISSION.start.with_text(changes), lines)
    assert result.requests == REQUESTS
    assert verdict.stars == stars, verdict.reasons
