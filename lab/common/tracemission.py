"""Missions on replayed traffic: where their trace is, how a setup of theirs runs, and the slice the site ships.

A mission with a `trace` (missions/catalog.py) plays the first
`trace_requests` requests of that public trace instead of synthetic traffic.
The traces are not part of the project: they are read from the folder
`PREFIX_LAB_TRACES` names, else `../shared/traces` beside the project.
`prefix-lab score` and the tests replay the slice from there; `prefix-lab
build` copies it into the site (`lab.page.tracepage.mission_file`), which the
page fetches from its own origin when the mission is chosen. A build without
the traces leaves the slice out and says so; the page then says the
mission's traffic is missing.
"""

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from lab.common.traces import CommandError
from lab.page.tracepage import MISSION_KEY, mission_file
from missions import MISSIONS, Mission
from model import Result, Scenario, replay, simulate

__all__ = ["TRACES_ENV", "BytesSource", "mission_lines", "mission_sources", "run_mission", "traces_dir",
           "write_slices"]

TRACES_ENV = "PREFIX_LAB_TRACES"


def traces_dir() -> Path:
    """The folder holding the public traces."""
    named = os.environ.get(TRACES_ENV)
    return Path(named) if named else Path(__file__).resolve().parents[3] / "shared" / "traces"


def mission_lines(mission: Mission) -> Callable[[], Iterator[bytes]]:
    """The mission's trace lines, afresh on each call; CommandError naming the file if it is not there."""
    path = traces_dir() / mission.trace
    if not path.is_file():
        raise CommandError(f"mission {mission.id} replays {path}, which is not there: put the public traces in "
                           f"../shared/traces beside the project, or name their folder in {TRACES_ENV}")

    def lines() -> Iterator[bytes]:
        with open(path, "rb") as f:
            yield from itertools.islice(f, mission.trace_requests)
    return lines


def run_mission(mission: Mission, scenario: Scenario) -> Result:
    """`scenario` run on the mission's traffic: its trace replayed, or the scenario's own."""
    if not mission.trace:
        return simulate(scenario)
    return replay(scenario, mission_lines(mission))


def write_slices(site: Path) -> list[str]:
    """Copy each trace mission's slice into the built site; a sentence for each one left out."""
    missing = []
    for mission in MISSIONS:
        if not mission.trace:
            continue
        try:
            lines = mission_lines(mission)
        except CommandError as exc:
            missing.append(f"left out the traffic of {exc}")
            continue
        target = site / mission_file(mission)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"".join(lines()))
    return missing


class BytesSource:
    """A trace held in memory, as the page's worker hands the view a file (`lab.page.tracepage.Source`)."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self.data, self.size = name, data, len(data)

    def read(self, start: int, end: int) -> bytes:
        return self.data[start:end]

    def progress(self, phase: str, requests: int, read: int) -> None:
        pass


def mission_sources() -> dict[str, BytesSource]:
    """Every trace mission's slice as the page holds it once fetched, by the view's file key."""
    return {MISSION_KEY + m.id: BytesSource(m.trace, b"".join(mission_lines(m)())) for m in MISSIONS if m.trace}
