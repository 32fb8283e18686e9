"""Missions: broken setups to fix, each opened by its prerequisites, scored with up to three stars.

`MISSIONS` lists them in display order; `unlocked(progress)` says which are
open given the best stars by mission id; `score(mission, scenario, result)`
is the only scoring rule, used by the CLI, the tests and the page alike.
Each mission declares the grid of setups its sweep runs (`grid`), and
`missions.sweep` scores them all and ranks a player's setup among them.
Standard library and `model` only.
"""

from .catalog import MISSIONS, check_catalog, find_mission, unlocked
from .grid import Block
from .scoring import (
    FIGURES,
    Hint,
    Mission,
    Prediction,
    Threshold,
    Verdict,
    changed_fixed_keys,
    figures,
    score,
    unearnable,
)
from .sweep import BEATS_RULE, beats, beats_rule, distribution, grid_keys, measure, truth_of

__all__ = ["BEATS_RULE", "FIGURES", "MISSIONS", "Block", "Hint", "Mission", "Prediction", "Threshold", "Verdict", "beats", "beats_rule",
           "changed_fixed_keys", "check_catalog", "distribution", "figures", "find_mission", "grid_keys", "measure",
           "score", "truth_of", "unearnable", "unlocked"]
