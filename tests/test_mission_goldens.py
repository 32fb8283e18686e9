"""Mission scores are pinned: every mission's verdict on its start and on its known solutions, to the byte."""

import hashlib
import json

from test_missions import SOLUTIONS

from missions import MISSIONS, score
from model import simulate

# sha256 over each mission's verdicts (stars, pass, every reason with its figure) on its broken start, its
# one-star and its three-star setup. A change here means a player's score would move: make it on purpose.
GOLDEN = "e7daebea7578cd6a4e9103b951d36b00a70fb65a560367319114e022c41617f4"


def verdicts():
    out = {}
    for m in MISSIONS:
        setups = {"start": {}, "one": SOLUTIONS[m.id][0], "three": SOLUTIONS[m.id][1]}
        for name, changes in setups.items():
            scenario = m.start.with_text(changes)
            out[f"{m.id}/{name}"] = score(m, scenario, simulate(scenario)).to_dict()
    return out


def test_every_mission_scores_what_it_scored():
    digest = hashlib.sha256(json.dumps(verdicts(), sort_keys=True).encode()).hexdigest()
    assert digest == GOLDEN, f"mission scores moved; new digest {digest}"
