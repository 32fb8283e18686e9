"""What every figure is (`Figure`), what it is drawn from (`Context`), and the helpers they share.

Standard library, `model` only: this runs in the browser too.
"""

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from model import PRESETS, Result, Scenario, explainer_profile, rounded_all, run_key


class Context(NamedTuple):
    """What a figure is drawn from: the scenario, its fleet's run, and a way to run a variant of it."""

    scenario: Scenario
    result: Result
    run: Callable[[Scenario], Result]  # simulate, remembering recent runs (the view's)
    page: Mapping[str, str] = {}  # the page keys (the tree's replica and moment); never changed


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure of the page: its sources' columns and its caption, from a `Context`."""

    name: str  # figure `fig:<name>`, sources `src:<name>...`, caption `#cap-<name>`, embed `?figure=<name>`
    title: str
    data: Callable[[Context], dict[str, dict]]  # source name -> {"data": columns}; "#id" -> a DOM patch
    caption: Callable[[Context], str]
    reads: tuple[str, ...] = ()  # key prefixes read besides the fleet's run
    controls: tuple[str, ...] = ()  # the controls its paragraph needs
    fleet: bool = True  # drawn from the fleet's run
    example: tuple[tuple[str, str], ...] = ()  # keys and values of a setup that shows it, offered when it is empty
    constant: bool = False  # reads nothing that changes: drawn once, at build time, and never sent again
    offer: str = "Load the article's setup"  # the button that loads `example`
    costly: bool = False  # runs the fleet in other setups besides the page's: not redrawn while a slider moves
    canvas: bool = False  # drawn by the page's own script from its DOM patch (static/film.js), not by Bokeh


@functools.lru_cache(maxsize=32)  # asked by every fleet figure of every answer: remembered by the scenario
def fleet_key(scenario: Scenario) -> tuple[tuple[str, str], ...]:
    """The scenario as the simulation sees it (`model.run_key`, from each key's own declaration)."""
    return run_key(scenario)


def bin_mids(result: Result) -> list[float]:
    return mid_times(result.series.start_s, result.series.bin_s)


def mid_times(starts: Sequence[float], bin_s: float) -> list[float]:
    """The middle of each bin starting at `starts`: where a per-bin figure is drawn."""
    return rounded_all([t + bin_s / 2 for t in starts], 3)


def shaded(scenario: Scenario) -> str:
    from lab.page.controls import describe_event
    return "; shaded: " + ", ".join(describe_event(e) for e in scenario.events) if scenario.events else ""


def replica_name(i: int) -> str:
    return f"replica {i}"


def profile_note(scenario: Scenario) -> str:
    profile, notes = explainer_profile(scenario)
    label = PRESETS[profile.preset].label
    return f" Computed for {label}" + ("; the lab's own preset has no FLOP figures." if notes else ".")


def percent(share: float | None) -> float | None:
    """A share as a percentage to two decimals (None stays None: a gap in a chart)."""
    return None if share is None else round(share * 100, 2)
