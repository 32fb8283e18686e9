"""A mission's sweep: every setup of its grid, run and scored, so a player's setup can be placed among them.

`sweep(mission, run)` runs the broken start and each setup of the mission's
grid (missions/grid.py: the start with a few keys set) through `run`
(`model.simulate`, or `lab.common.tracemission.run_mission` bound to the mission
for one that replays a trace) and `score`, and returns its distribution, a
JSON-ready dict:

    id         the mission
    grid       its blocks, as {key: [values]}
    keys       every key the grid sets, in order; each setup's `settings` has all of them
    tradeoff   the two figures that pull against each other, as [x, y]; x ranks first
    figures    the figures kept for each setup (`Mission.scored()`)
    setups     [{"settings": {key: text}, "figures": {figure: value}, "stars": n}], in grid order
    pareto     indices into `setups` of the trade-off's Pareto front, by x then y
    start      the broken start, as one more row (not among `setups`)
    predict    the mission's prediction with `truth`, its figure on the broken start; or None

Figures are kept to six significant digits (`rounded`), and a player's
setup is rounded the same way before it is compared.

"Beats" (`beats`, `BEATS_RULE`): one setup beats another when it earns
more stars; with as many stars, when it is strictly better on the trade-off's
first figure; and with that equal too, when it is strictly better on the
second. `beats(distribution, row)` is the share of swept setups the row
beats, with the share it ties (equal on all three) beside it.

Deterministic (the model is) and standard library only; the build and the
bench spread the runs over processes (lab/site/missionsweep.py), never this module.
"""

from collections.abc import Callable
from typing import Any

from model import Result, Scenario, simulate

from .scoring import BETTER, FIGURES, Mission, figures, score

__all__ = ["BEATS_RULE", "beats", "beats_rule", "distribution", "grid_keys", "measure", "pareto", "rank", "rounded",
           "scenarios", "sweep"]

BEATS_RULE = ("a setup beats another when it earns more stars; with as many stars, when it is strictly better on "
              "the mission's first trade-off figure; with that equal too, when it is strictly better on the second")


def rounded(value: float) -> float:
    """`value` to six significant digits (whole numbers stay whole)."""
    if isinstance(value, int):
        return value
    return float(f"{value:.6g}")


def grid_keys(mission: Mission) -> list[str]:
    """Every key the mission's grid sets, in the order its blocks name them."""
    keys: list[str] = []
    for block in mission.grid:
        keys += [key for key in block.keys if key not in keys]
    return keys


def scenarios(mission: Mission) -> list[Scenario]:
    """The scenario of each setup of the grid, in order."""
    return [mission.start.with_text(setup) for setup in mission.setups()]


def measure(mission: Mission, scenario: Scenario, result: Result) -> dict[str, Any]:
    """One row: the grid's keys as `scenario` sets them, the mission's scored figures and its stars."""
    values = figures(scenario, result)
    text = scenario.to_text()
    return {"settings": {key: text[key] for key in grid_keys(mission)},
            "figures": {f: rounded(values[f]) for f in mission.scored()},
            "stars": score(mission, scenario, result).stars}


def rank(tradeoff: tuple[str, str] | list[str], row: dict[str, Any]) -> tuple[float, float, float]:
    """What `beats` compares, larger is better: stars, then the trade-off's two figures made larger-is-better."""
    x, y = tradeoff
    return row["stars"], BETTER[x] * row["figures"][x], BETTER[y] * row["figures"][y]


def pareto(tradeoff: tuple[str, str] | list[str], rows: list[dict[str, Any]]) -> list[int]:
    """Indices of the rows no other row dominates on the trade-off (as good on both, better on one), by x then y."""
    x, y = tradeoff
    points = [(BETTER[x] * r["figures"][x], BETTER[y] * r["figures"][y]) for r in rows]
    best = sorted(range(len(rows)), key=lambda i: (-points[i][0], -points[i][1], i))
    front: list[int] = []
    top_y = float("-inf")
    for i in best:  # best x first: a point is on the front when its y beats every y seen with a better x
        if points[i][1] > top_y or (front and points[i] == points[front[-1]]):
            front.append(i)
            top_y = max(top_y, points[i][1])
    return sorted(front, key=lambda i: (rows[i]["figures"][x], rows[i]["figures"][y], i))


def distribution(mission: Mission, rows: list[dict[str, Any]], start: dict[str, Any],
                 truth: float | None) -> dict[str, Any]:
    """The distribution (see the module's docstring) from the rows of the grid, the start's row and the truth."""
    predict = None if mission.predict is None else {**mission.predict.to_dict(), "truth": truth}
    return {"id": mission.id, "grid": [b.to_dict() for b in mission.grid], "keys": grid_keys(mission),
            "tradeoff": list(mission.tradeoff), "figures": list(mission.scored()), "setups": rows,
            "pareto": pareto(mission.tradeoff, rows), "start": start, "predict": predict}


def truth_of(mission: Mission, result: Result) -> float | None:
    """The prediction's figure on the broken start (whose run is `result`), rounded; None without a prediction."""
    if mission.predict is None:
        return None
    return rounded(figures(mission.start, result)[mission.predict.figure])


def sweep(mission: Mission, run: Callable[[Scenario], Result] = simulate) -> dict[str, Any]:
    """Run the start and every setup of the grid with `run`; return the mission's distribution."""
    start = run(mission.start)
    rows = [measure(mission, s, run(s)) for s in scenarios(mission)]
    return distribution(mission, rows, measure(mission, mission.start, start), truth_of(mission, start))


def beats(dist: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """{"beats": share of swept setups `row` beats, "ties": share equal to it, "swept": how many} (see BEATS_RULE)."""
    mine = rank(dist["tradeoff"], row)
    ranks = [rank(dist["tradeoff"], r) for r in dist["setups"]]
    n = len(ranks)
    return {"beats": sum(mine > r for r in ranks) / n if n else 0.0,
            "ties": sum(mine == r for r in ranks) / n if n else 0.0, "swept": n}


def beats_rule(mission: Mission) -> str:
    """BEATS_RULE for this mission, its figures named."""
    x, y = (f"{FIGURES[f][0]} ({'higher' if BETTER[f] > 0 else 'lower'} is better)" for f in mission.tradeoff)
    return f"more stars first, then {x}, then {y}; a setup beats another only if it is strictly ahead"
