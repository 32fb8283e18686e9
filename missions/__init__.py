"""Missions: broken setups to fix, each opened by its prerequisites, scored with up to three stars.

`MISSIONS` lists them in display order; `unlocked(progress)` says which are
open given the best stars by mission id; `score(mission, scenario, result)`
is the only scoring rule, used by the CLI, the tests and the page alike.
Standard library and `model` only.
"""

from .catalog import MISSIONS, check_catalog, find_mission, unlocked
from .scoring import FIGURES, Mission, Threshold, Verdict, changed_fixed_keys, figures, score
from .sweep import beats, beats_rule

__all__ = ["FIGURES", "MISSIONS", "Mission", "Threshold", "Verdict", "beats", "beats_rule", "changed_fixed_keys",
           "check_catalog", "figures", "find_mission", "score", "unlocked"]
