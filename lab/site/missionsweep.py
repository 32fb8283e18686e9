"""Every mission's sweep (missions/sweep.py), run on local processes, cached by the model's digest, and shipped.

`distributions()` gives each mission's distribution: read from the cache
when one was made from the same sources, else swept (the points of every
mission not cached spread over one process per core) and then cached. The
cache is a JSON file per mission in the build's cache folder
(`lab.site.stdlib.cache_dir()`, beside the precompiled standard library and the
snapshot), named by `stamp()`: a digest of the model, the missions, the code
that replays a trace mission, this module, and the slice of each mission's
trace. The test suite's builds and the CLI therefore sweep once per change
of the model and read the file afterwards.

A fresh clone has no cache, so the repository carries one more copy,
`SHIPPED` (`python -m lab.site.missionsweep` rewrites it): used for every
mission when its stamp is the sources' own, so a clean checkout (and CI)
builds without sweeping. tests/missions/test_mission_sweep.py fails when it falls
behind the model and says how to refresh it.

`prefix-lab build` writes them all into the site as `SITE_FILE`:

    {"stamp": digest, "rule": missions.sweep.BEATS_RULE,
     "missions": [distribution, ... in the catalog's order],
     "missing": {mission id: why it was not swept}}

A mission whose trace is not there is left out (under `missing`), as the
build leaves out its traffic. Build, bench and CLI only (CPython); the page
reads the file.
"""

import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from lab.common.tracemission import mission_lines, run_mission, traces_dir
from lab.common.traces import CommandError
from lab.site.stdlib import cache_dir
from missions import BEATS_RULE, MISSIONS, Mission, distribution, find_mission, measure, truth_of

__all__ = ["SHIPPED", "SITE_FILE", "distributions", "stamp", "sweep_points", "write_distributions", "write_shipped"]

SITE_FILE = "mission-sweeps.json"
ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("model", "missions")  # every .py in these, and the files below, make up the digest
FILES = ("lab/common/tracemission.py", "lab/common/traces.py", "lab/site/missionsweep.py")
IN_PROCESS = 24  # fewer points than this run in this process: starting workers would cost more
SHIPPED = ROOT / "lab" / "data" / SITE_FILE  # the distributions as of the last `python -m lab.site.missionsweep`


def stamp() -> str:
    """The digest the cache is keyed by (the sources, and each trace mission's slice as it is now)."""
    return _stamp(str(traces_dir()))


@functools.cache
def _stamp(traces: str) -> str:  # once per process and traces folder: sources do not change under a running build
    digest = hashlib.sha256()
    files = [p for pkg in SOURCES for p in sorted((ROOT / pkg).rglob("*.py"))] + [ROOT / f for f in FILES]
    for path in files:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    for m in MISSIONS:
        if m.trace:
            try:
                digest.update(m.id.encode() + b"".join(mission_lines(m)()))
            except CommandError:
                digest.update(m.id.encode() + b" missing")
    return digest.hexdigest()[:24]


def _point(mission_id: str, settings: dict[str, str] | None) -> tuple[dict[str, Any], float | None]:
    """One setup's row (`settings` None: the broken start's, with the prediction's truth)."""
    mission = find_mission(mission_id)
    assert mission is not None
    scenario = mission.start if settings is None else mission.start.with_text(settings)
    result = run_mission(mission, scenario)
    return measure(mission, scenario, result), truth_of(mission, result) if settings is None else None


def sweep_points(missions: Iterable[Mission], workers: int | None = None) -> dict[str, dict[str, Any]]:
    """Each mission's distribution, its points run on `workers` processes (default: one per core)."""
    missions = list(missions)
    tasks = [(m.id, s) for m in missions for s in [None, *m.setups()]]
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(tasks) < IN_PROCESS:
        done = [_point(*task) for task in tasks]
    else:
        try:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                done = list(pool.map(_point, *zip(*tasks, strict=True), chunksize=4))
        except (OSError, BrokenProcessPool):  # no processes to be had here (a sandbox, no /dev/shm): run them here
            done = [_point(*task) for task in tasks]
    out, i = {}, 0
    for m in missions:
        (start, truth), rows = done[i], [row for row, _ in done[i + 1:i + 1 + len(m.setups())]]
        i += 1 + len(rows)
        out[m.id] = distribution(m, rows, start, truth)
    return out


def _cached(mission: Mission, key: str) -> Path:
    return cache_dir() / f"mission-sweep-{key}-{mission.id}.json"


def distributions(missions: Iterable[Mission] = MISSIONS, workers: int | None = None,
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """{"stamp", "rule", "missions": [distribution], "missing": {id: why}}: from the cache, sweeping what is not in it."""
    missions, key = list(missions), stamp()
    found: dict[str, dict[str, Any]] = {}
    missing: dict[str, str] = {}
    shipped = _shipped(key)
    for m in missions:
        try:
            found[m.id] = json.loads(_cached(m, key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            if m.id in shipped:
                found[m.id] = shipped[m.id]  # not cached here, but the repository's copy is current
            # else not cached yet, or a damaged entry: sweep it
    todo = []
    for m in missions:
        if m.id in found:
            continue
        if m.trace:
            try:
                mission_lines(m)
            except CommandError as exc:
                missing[m.id] = str(exc)
                continue
        todo.append(m)
    if todo and progress is not None:
        progress(f"sweeping {sum(len(m.setups()) + 1 for m in todo)} setups of {len(todo)} mission(s)")
    for mission_id, dist in (sweep_points(todo, workers) if todo else {}).items():
        found[mission_id] = dist
        try:
            path = _cached(next(m for m in todo if m.id == mission_id), key)
            path.parent.mkdir(parents=True, exist_ok=True)
            temp = path.with_name(f".{path.name}.{os.getpid()}")
            temp.write_text(json.dumps(dist, separators=(",", ":")), encoding="utf-8")
            os.replace(temp, path)  # whole or not at all: another build may be reading it
        except OSError:
            pass  # no cache: the next run sweeps again
    return {"stamp": key, "rule": BEATS_RULE, "missions": [found[m.id] for m in missions if m.id in found],
            "missing": missing}


def _shipped(key: str) -> dict[str, dict[str, Any]]:
    """The repository's distributions by mission id, if they were made from these sources; else none."""
    try:
        data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("stamp") != key:
        return {}
    return {d["id"]: d for d in data.get("missions", []) if isinstance(d, dict) and "id" in d}


def write_shipped() -> Path:
    """Sweep what the cache lacks and write the repository's copy, `SHIPPED`."""
    dists = distributions(progress=print)
    SHIPPED.parent.mkdir(parents=True, exist_ok=True)
    SHIPPED.write_text(json.dumps(dists, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    return SHIPPED


def write_distributions(site: Path) -> list[str]:
    """Write SITE_FILE into the built site; a sentence for each mission left out."""
    dists = distributions()
    (site / SITE_FILE).write_text(json.dumps(dists, separators=(",", ":")), encoding="utf-8")
    return [f"left out the sweep of mission {mission_id}: {why}" for mission_id, why in dists["missing"].items()]


if __name__ == "__main__":
    print(f"wrote {write_shipped()}")
