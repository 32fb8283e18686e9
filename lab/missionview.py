"""The missions panel of the page: the list, the chosen mission, and how the current setup scores.

Runs with `lab.view` (in the browser under Pyodide, and at build time).
Progress is the best stars per mission, kept by the browser in localStorage
and sent with every request; missions unlock in order (one star on the one
before), or all at once with `#unlock=all` for a workshop facilitator. The
chosen mission is `#mission=<id>` in the URL, so a link opens it. While a
mission is chosen, only the controls it allows stay enabled.
"""

import html
from typing import Any

from missions import MISSIONS, Mission, find_mission, score
from model import Result, Scenario

__all__ = ["ACTIONS", "apply_action", "mission_patches", "read_progress"]

ACTIONS = ("select_mission", "load_mission", "reset_progress")
LOCK = ('<svg aria-hidden="true" width="10" height="12" viewBox="0 0 10 12"><rect x="1" y="5" width="8" height="6" '
        'rx="1" fill="currentColor"/><path d="M3 5V3.5a2 2 0 0 1 4 0V5" stroke="currentColor" fill="none"/></svg>'
        '<span class="sr-only">locked:</span>')
KEY_LABELS = {"fleet.cache": "prefix cache", "fleet.memory_gb": "prefix memory", "fleet.replicas": "replicas",
              "router.kind": "router", "router.spill_threshold_s": "spill threshold",
              "dynamic_text": "dynamic text", "traffic.session_rate": "request rate", "seed": "seed",
              "events": "events"}


def read_progress(raw: Any) -> dict[str, int]:
    """Best stars per known mission, from whatever the browser sent (anything else is dropped)."""
    if not isinstance(raw, dict):
        return {}
    known = {m.id for m in MISSIONS}
    return {k: v for k, v in raw.items()
            if k in known and isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 3}


def unlocked(progress: dict[str, int], page: dict) -> set[str]:
    if page.get("unlock") == "all":
        return {m.id for m in MISSIONS}
    out, previous_passed = set(), True
    for m in MISSIONS:
        if previous_passed:
            out.add(m.id)
        previous_passed = progress.get(m.id, 0) >= 1
    return out


def current(page: dict, progress: dict[str, int], notices: list[str]) -> Mission | None:
    """The chosen mission, if it exists and is unlocked (else a notice, and none)."""
    mission_id = page.get("mission")
    if not mission_id:
        return None
    mission = find_mission(mission_id)
    if mission is None:
        notices.append(f"There is no mission '{mission_id[:40]}'; showing free play.")
    elif mission.id not in unlocked(progress, page):
        notices.append(f"'{mission.title}' unlocks when the mission before it is passed.")
        mission = None
    if mission is None:
        page.pop("mission", None)
    return mission


def apply_action(action: dict, scenario: Scenario, page: dict, progress: dict[str, int],
                 notices: list[str]) -> tuple[Scenario, dict[str, int]]:
    kind = action.get("type")
    if kind == "select_mission":
        mission_id = str(action.get("mission") or "")
        if mission_id:
            page["mission"] = mission_id
        else:
            page.pop("mission", None)
    elif kind == "load_mission":
        mission = current(page, progress, notices)
        if mission is not None:
            scenario = mission.start
    elif kind == "reset_progress":
        progress = {}
    return scenario, progress


def mission_patches(scenario: Scenario, result: Result, page: dict, progress: dict[str, int],
                    notices: list[str], bokeh: dict, dom: dict) -> tuple[dict[str, int], Mission | None]:
    """Write the missions panel; return the progress with this setup's stars counted, and the active mission."""
    mission = current(page, progress, notices)
    detail = '<p class="hint">Pick a mission to get a broken setup to fix, or keep exploring in free play.</p>'
    if mission is not None:
        verdict = score(mission, scenario, result)
        if verdict.stars > progress.get(mission.id, 0):
            progress = {**progress, mission.id: verdict.stars}
        detail = _detail(mission, verdict)
        for name, patch in bokeh.items():
            key = name.removeprefix("ctl:").replace("router.spill_off", "router.spill_threshold_s")
            if name.startswith("ctl:") and key not in mission.controls:
                patch["disabled"] = True
        for kind in ("timestamp", "surge", "burst"):
            bokeh[f"act:{kind}"] = {"disabled": "events" not in mission.controls}
    else:
        for kind in ("timestamp", "surge", "burst"):
            bokeh[f"act:{kind}"] = {"disabled": False}
    open_ids = unlocked(progress, page)
    items = []
    for n, m in enumerate(MISSIONS, 1):
        stars = progress.get(m.id, 0)
        chosen = mission is not None and m.id == mission.id
        shown = f"{n}. {html.escape(m.title)} <span class=\"stars\" aria-label=\"{stars} of 3 stars\">{_stars(stars)}</span>"
        if m.id in open_ids:
            items.append(f'<li><button type="button" class="mission{" chosen" if chosen else ""}" '
                         f'data-action="select_mission" data-mission="{m.id}" aria-pressed="{str(chosen).lower()}" '
                         f'data-stars="{stars}">{shown}</button></li>')
        else:
            items.append(f'<li><button type="button" class="mission locked" disabled data-mission="{m.id}" '
                         f'title="Pass the mission before it to unlock this one">{LOCK} {shown}</button></li>')
    free = "" if mission is None else \
        '<li><button type="button" class="mission" data-action="select_mission" data-mission="">Free play</button></li>'
    dom["#missions"] = {"hidden": False, "html": (
        '<div class="mission-head"><h2>Missions</h2>'
        '<button type="button" class="reset" data-action="reset_progress">Reset progress</button></div>'
        f'<ol class="mission-list">{"".join(items)}{free}</ol>'
        f'<div class="mission-detail">{detail}</div>')}
    return progress, mission


def _detail(mission: Mission, verdict: Any) -> str:
    allowed = ", ".join(KEY_LABELS.get(k, k) for k in mission.controls)
    levels = (f"<li>One star: {html.escape(mission.goal_text())}</li>"
              f"<li>Two stars: also {html.escape('; '.join(t.text() for t in mission.two_stars))}</li>"
              f"<li>Three stars: also {html.escape('; '.join(t.text() for t in mission.three_stars))}</li>")
    if verdict.passed:
        head = f'<p class="verdict-head"><strong>Mission passed</strong> <span class="stars big">{_stars(verdict.stars)}</span></p>'
        after = f'<p class="lesson">{html.escape(mission.lesson)}</p>'
    else:
        head = '<p class="verdict-head"><strong>Not passed yet</strong></p>'
        after = ""
    reasons = "".join(f"<li>{html.escape(r)}</li>" for r in verdict.reasons)
    return (f'<h3>{html.escape(mission.title)}</h3><p>{html.escape(mission.brief)}</p>'
            f'<ul class="levels">{levels}</ul><p class="allowed">You may change: {html.escape(allowed)}.</p>'
            '<p><button type="button" class="load" data-action="load_mission">Load mission setup</button></p>'
            f'<div class="verdict {"passed" if verdict.passed else "failed"}" data-passed="{str(verdict.passed).lower()}" '
            f'data-stars="{verdict.stars}" role="status">{head}<ul class="reasons">{reasons}</ul>{after}</div>')


def _stars(n: int) -> str:
    return "★" * n + "☆" * (3 - n)
