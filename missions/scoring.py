"""Missions as data, and the one function that scores a setup against one.

A mission starts from a broken scenario and lets the player change a few
keys. `score(mission, scenario, result)` gives 0 to 3 stars: nothing unless
every `goal` threshold holds (and no fixed key was changed); one star for
the goal; a second if every `two_stars` threshold holds too; a third if the
`three_stars` ones hold as well. Thresholds read `figures(scenario, result)`:
the result's headline numbers plus the fleet's size (`replicas`,
`memory_gb` per replica, `fleet_memory_gb` in all, `gpus`: a split
fleet's prefill and decode replicas) and serving mode's SLO shares.
`BETTER` says which way each figure improves; the sweep (missions/sweep.py)
and the "beats" share read it.

A mission also declares what the page and `prefix-lab missions` show around
the verdict: its `grid` (missions/grid.py), the two figures its setups trade
against each other (`tradeoff`), hints, and a `Prediction` asked before its
first run.

Pure functions of their arguments, standard library only: the CLI, the
tests and the page (under Pyodide) all call the same code.
"""

from dataclasses import dataclass
from typing import Any

from model import Result, Scenario

from .grid import Block, setups

__all__ = ["BETTER", "Mission", "Prediction", "Threshold", "Verdict", "figures", "score", "setup_figures", "unearnable"]

FIGURES = {  # figure -> (label, how to show a value)
    "hit_rate": ("hit rate", lambda v: f"{v * 100:.1f}%"),
    "ttft_p50_ms": ("TTFT p50", lambda v: f"{v:,.0f} ms"),
    "ttft_p95_ms": ("TTFT p95", lambda v: f"{v:,.0f} ms"),
    "ttft_p99_ms": ("TTFT p99", lambda v: f"{v:,.0f} ms"),
    "ttft_mean_ms": ("mean TTFT", lambda v: f"{v:,.0f} ms"),
    "throughput_rps": ("throughput", lambda v: f"{v:.2f} requests/s"),
    "router_overestimate": ("share of the router's guesses that were wrong", lambda v: f"{v * 100:.1f}%"),
    "replicas": ("replicas", lambda v: f"{v:g}"),
    "memory_gb": ("prefix memory per replica", lambda v: f"{v:g} GB"),
    "fleet_memory_gb": ("prefix memory in the fleet", lambda v: f"{v:g} GB"),
    "ttft_slo_met": ("requests whose first token came within the TTFT target", lambda v: f"{v * 100:.1f}%"),
    "tbt_slo_met": ("answers that never waited longer than the TBT target between tokens",
                    lambda v: f"{v * 100:.1f}%"),
    "gpus": ("GPUs", lambda v: f"{v:g}"),
}
BETTER = {  # figure -> 1 if more is better, -1 if less is
    "hit_rate": 1, "ttft_p50_ms": -1, "ttft_p95_ms": -1, "ttft_p99_ms": -1, "ttft_mean_ms": -1, "throughput_rps": 1,
    "router_overestimate": -1, "replicas": -1, "memory_gb": -1, "fleet_memory_gb": -1, "ttft_slo_met": 1,
    "tbt_slo_met": 1, "gpus": -1,
}


def setup_figures(scenario: Scenario) -> dict[str, float]:
    """The figures a setup fixes before it runs: the fleet's size (`replicas`, `memory_gb` per replica,
    `fleet_memory_gb` in all, `gpus`: a split fleet's prefill and decode replicas)."""
    fleet = scenario.fleet
    return {"replicas": fleet.replicas, "memory_gb": fleet.memory_gb,
            "fleet_memory_gb": fleet.replicas * fleet.memory_gb, "gpus": scenario.gpus}


def figures(scenario: Scenario, result: Result) -> dict[str, float]:
    """What thresholds can be set on: the result's headline and the fleet's size."""
    data = {key: getattr(result, key) for key in
            ("hit_rate", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "ttft_mean_ms", "throughput_rps",
             "router_overestimate")}
    setup = setup_figures(scenario)
    data["replicas"] = setup["replicas"]
    data["memory_gb"] = setup["memory_gb"]
    data["fleet_memory_gb"] = setup["fleet_memory_gb"]
    data["ttft_slo_met"] = result.ttft_slo_met or 0.0  # None in lab mode: no target met
    data["tbt_slo_met"] = result.tbt_slo_met or 0.0
    data["gpus"] = setup["gpus"]
    return data


@dataclass(frozen=True, slots=True)
class Threshold:
    """`figure` must be at most (`<=`) or at least (`>=`) `value`."""

    figure: str
    op: str  # "<=" or ">="
    value: float

    def __post_init__(self) -> None:
        if self.figure not in FIGURES or self.op not in ("<=", ">="):
            raise ValueError(f"bad threshold {self.figure} {self.op} {self.value}")

    def holds(self, values: dict[str, float]) -> bool:
        v = values[self.figure]
        return v <= self.value if self.op == "<=" else v >= self.value

    def text(self) -> str:
        label, show = FIGURES[self.figure]
        return f"{label} {'at most' if self.op == '<=' else 'at least'} {show(self.value)}"

    def check(self, values: dict[str, float]) -> str:
        """A sentence saying whether it holds, with the figure reached."""
        label, show = FIGURES[self.figure]
        mark = "met" if self.holds(values) else "not yet"
        return f"{self.text()}: {show(values[self.figure])}, {mark}"


@dataclass(frozen=True, slots=True)
class Prediction:
    """A figure of the broken start the player guesses before its first run, on a slider from `lo` to `hi`."""

    figure: str  # a key of FIGURES
    question: str
    lo: float
    hi: float
    step: float

    def __post_init__(self) -> None:
        if self.figure not in FIGURES or not self.lo < self.hi or self.step <= 0:
            raise ValueError(f"bad prediction {self.figure} from {self.lo} to {self.hi} by {self.step}")

    def to_dict(self) -> dict[str, Any]:
        return {"figure": self.figure, "label": FIGURES[self.figure][0], "question": self.question, "lo": self.lo,
                "hi": self.hi, "step": self.step}


@dataclass(frozen=True, slots=True)
class Mission:
    id: str  # short, for URLs and the CLI
    title: str
    brief: str  # what is broken, in a few sentences
    lesson: str  # what the player should take away, shown on success
    start: Scenario  # the broken setup "Load mission setup" restores
    controls: tuple[str, ...]  # scenario keys the player may change
    goal: tuple[Threshold, ...]  # all must hold to pass (one star)
    two_stars: tuple[Threshold, ...]
    three_stars: tuple[Threshold, ...]
    requires: tuple[str, ...] = ()  # ids of the missions that must each have a star before this one opens
    trace: str = ""  # its traffic: the first `trace_requests` requests of this trace file (see lab.common.tracemission)
    trace_requests: int = 0  # ("" : the scenario's own synthetic traffic)
    grid: tuple[Block, ...] = ()  # the setups the sweep runs (missions/grid.py)
    tradeoff: tuple[str, str] = ("replicas", "ttft_p99_ms")  # two figures that pull apart; the first ranks first
    hints: tuple[str, ...] = ()  # offered one at a time, in order; each names a control or a chart, never a value
    predict: Prediction | None = None  # asked before the first run

    def __post_init__(self) -> None:
        if len(self.tradeoff) != 2 or any(f not in BETTER for f in self.tradeoff):
            raise ValueError(f"mission {self.id}: tradeoff must name two figures of {', '.join(BETTER)}")

    def goal_text(self) -> str:
        return "; ".join(t.text() for t in self.goal)

    def scored(self) -> tuple[str, ...]:
        """The figures a sweep keeps for each setup: the trade-off's two, then those the stars read."""
        out = list(self.tradeoff)
        for t in (*self.goal, *self.two_stars, *self.three_stars):
            if t.figure not in out:
                out.append(t.figure)
        return tuple(out)

    def setups(self) -> list[dict[str, str]]:
        """The grid's setups, each as the keys it sets (the rest is the start)."""
        return setups(self.grid)

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "brief": self.brief, "goal": self.goal_text(),
            "two_stars": "; ".join(t.text() for t in self.two_stars),
            "three_stars": "; ".join(t.text() for t in self.three_stars),
            "controls": list(self.controls), "requires": list(self.requires), "start": self.start.to_dict(),
            "grid": [b.to_dict() for b in self.grid], "tradeoff": list(self.tradeoff), "hints": list(self.hints),
            "predict": None if self.predict is None else self.predict.to_dict(),
            **({"trace": self.trace, "trace_requests": self.trace_requests} if self.trace else {}),
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    stars: int  # 0..3
    passed: bool
    reasons: tuple[str, ...]  # one sentence per check, in order

    def to_dict(self) -> dict[str, Any]:
        return {"stars": self.stars, "passed": self.passed, "reasons": list(self.reasons)}


def changed_fixed_keys(mission: Mission, scenario: Scenario) -> list[str]:
    """Keys the setup changed that the mission keeps fixed."""
    start, now = mission.start.to_text(), scenario.to_text()
    return [key for key in start if key not in mission.controls and start[key] != now[key]]


def unearnable(mission: Mission, scenario: Scenario, stars: int) -> str | None:
    """Why `scenario` cannot earn `stars` on `mission`, read off the setup alone (nothing is run), or None.

    `score` gives `stars` only if no fixed key changed and every threshold up to that level holds; those on
    `setup_figures` are known before the run, so a setup that misses one of them can be turned down at once.
    """
    fixed = changed_fixed_keys(mission, scenario)
    if fixed:
        return f"it changes {', '.join(fixed)}, which this mission keeps as it was, so it earns no star"
    needed = (*mission.goal, *(mission.two_stars if stars >= 2 else ()), *(mission.three_stars if stars >= 3 else ()))
    known = setup_figures(scenario)
    for t in needed:
        if t.figure in known and not t.holds(known):
            return f"{stars} star(s) need {t.text()}; it has {FIGURES[t.figure][1](known[t.figure])}"
    return None


def score(mission: Mission, scenario: Scenario, result: Result) -> Verdict:
    """Stars, pass or fail, and why, for `scenario` (whose simulation is `result`) on `mission`."""
    fixed = changed_fixed_keys(mission, scenario)
    if fixed:
        return Verdict(0, False, (f"This setup changes {', '.join(fixed)}, which this mission keeps as it "
                                  "was; load the mission setup and change only what the mission lets you.",))
    values = figures(scenario, result)
    reasons = [f"Goal: {t.check(values)}." for t in mission.goal]
    if not all(t.holds(values) for t in mission.goal):
        return Verdict(0, False, tuple(reasons))
    stars = 1
    for level, thresholds in ((2, mission.two_stars), (3, mission.three_stars)):
        reasons += [f"Star {level}: {t.check(values)}." for t in thresholds]
        if stars == level - 1 and all(t.holds(values) for t in thresholds):
            stars = level
    return Verdict(stars, True, tuple(reasons))
