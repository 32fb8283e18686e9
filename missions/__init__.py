"""Missions: broken setups to fix, unlocked in order, scored with up to three stars.

`MISSIONS` lists them in order; `score(mission, scenario, result)` is the
only scoring rule, used by the CLI, the tests and the page alike. Standard
library and `model` only.
"""

from .catalog import MISSIONS, find_mission
from .scoring import Mission, Threshold, score

__all__ = ["MISSIONS", "Mission", "Threshold", "find_mission", "score"]
