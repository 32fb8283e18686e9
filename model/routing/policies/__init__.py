"""The routing policies, one file each, named by its `router.kind` (`model/routing/kinds.py` lists them).

A file holds its policy's rule (the class docstring), its `key`, `label`, `rule`,
the glossary's `help` and `brief`, `choose(view)`, `scores(view)` if it compares
something, and `POLICY`, the class. The scenario's allowed kinds, the page's menu
and glossary, `prefix-lab keys` and the hindsight explainer all read `ROUTERS`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from model.routing.kinds import KINDS

if TYPE_CHECKING:
    from model.config import Scenario
    from model.routing.view import Policy

__all__ = ["ROUTERS", "make_router"]

ROUTERS: dict[str, type[Policy]] = {kind: import_module(f"{__name__}.{kind}").POLICY for kind in KINDS}


def make_router(scenario: Scenario) -> Policy:
    """The policy `router.kind` names, made for `scenario`."""
    return ROUTERS[scenario.router.kind](scenario)
