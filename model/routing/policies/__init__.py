"""The routing policies, one file each, and the registry that lists them: the only list of routers.

Adding a router is one file here (its rule, its `key`, `label`, `rule`, `help`
and `brief`, `choose(view)`, and `POLICIES`, the classes it adds) and one line
in `FILES`. The scenario's allowed `router.kind` values, the page's menu and
glossary, `prefix-lab keys` and the hindsight explainer all read `ROUTERS`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from model.config import Scenario
    from model.routing.view import Policy

__all__ = ["FILES", "ROUTERS", "make_router"]

FILES = (  # the policies' files, in the order the page's menu lists them
    "round_robin",
    "random_choice",
    "least_loaded",
    "consistent_hash",
    "cache_aware",
    "power_of_two",
    "bounded_hash",
    "prefix_load_aware",
    "sglang",
    "cost",
)

ROUTERS: dict[str, type[Policy]] = {policy.key: policy for name in FILES
                                    for policy in import_module(f"{__name__}.{name}").POLICIES}


def make_router(scenario: Scenario) -> Policy:
    """The policy `router.kind` names, made for `scenario`."""
    return ROUTERS[scenario.router.kind](scenario)
