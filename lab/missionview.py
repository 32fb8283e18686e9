"""The missions panel of the page: which mission is chosen, which are open, how the setup scores.

Pure functions: none changes its arguments, each returns new values. Run by
`lab.view`, in the browser under Pyodide and at build time.

Progress is the best stars by mission id, kept by the browser in
localStorage (`prefix-lab:progress`) and sent with every request. It is
keyed by id, never by position: an id the catalog does not know (a mission
of a later version of the lab) is kept and handed back untouched, but shown
nowhere. A mission opens when every mission it `requires` has a star, or all
at once with `#unlock=all` for a workshop facilitator. The chosen mission is
`#mission=<id>` in the URL, so a link opens it; while a mission is chosen,
only the keys it allows stay enabled.
"""

import html
import re
from collections.abc import Mapping
from typing import Any

from missions import MISSIONS, Mission, Verdict, find_mission, unlocked
from model import Scenario

__all__ = ["ACTIONS", "apply_action", "chosen", "open_missions", "panel_html", "read_progress", "with_stars"]

ACTIONS = ("select_mission", "load_mission", "reset_progress")
LOCK = ('<svg aria-hidden="true" width="10" height="12" viewBox="0 0 10 12"><rect x="1" y="5" width="8" height="6" '
        'rx="1" fill="currentColor"/><path d="M3 5V3.5a2 2 0 0 1 4 0V5" stroke="currentColor" fill="none"/></svg>'
        '<span class="sr-only">locked:</span>')
KEY_LABELS = {"fleet.cache": "prefix cache", "fleet.memory_gb": "prefix memory", "fleet.replicas": "replicas",
              "router.kind": "router", "router.spill_threshold_s": "spill threshold",
              "dynamic_text": "dynamic text", "traffic.session_rate": "request rate", "seed": "seed",
              "events": "events"}
_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # what a mission id may look like, known or not


def read_progress(raw: Any) -> dict[str, int]:
    """Best stars by mission id from whatever the browser sent: unknown ids kept, malformed entries dropped."""
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and _ID.fullmatch(k)
            and isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 3}


def open_missions(progress: Mapping[str, int], page: Mapping[str, str]) -> frozenset[str]:
    """Ids of the missions a player may open."""
    if page.get("unlock") == "all":
        return frozenset(m.id for m in MISSIONS)
    return unlocked(progress, MISSIONS)


def chosen(page: Mapping[str, str], progress: Mapping[str, int]) -> tuple[Mission | None, str | None]:
    """The mission the page chose if it can be opened; else none, and a notice saying why."""
    mission_id = page.get("mission")
    if not mission_id:
        return None, None
    mission = find_mission(mission_id, MISSIONS)
    if mission is None:
        return None, f"There is no mission '{mission_id[:40]}'; showing free play."
    if mission.id not in open_missions(progress, page):
        return None, f"'{mission.title}' unlocks when you pass {_still_needed(mission, progress)}."
    return mission, None


def apply_action(action: Mapping[str, Any], scenario: Scenario, page: Mapping[str, str],
                 progress: Mapping[str, int]) -> tuple[Scenario, dict[str, str], dict[str, int]]:
    """A missions action's new scenario, page keys and progress."""
    kind = action.get("type")
    page, progress = dict(page), dict(progress)
    if kind == "select_mission":
        page.pop("mission", None)
        if action.get("mission"):
            page["mission"] = str(action["mission"])
    elif kind == "load_mission":
        mission, _ = chosen(page, progress)
        if mission is not None:
            scenario = mission.start
    elif kind == "reset_progress":
        progress = {}
    return scenario, page, progress


def with_stars(progress: Mapping[str, int], mission: Mission | None, verdict: Verdict | None) -> dict[str, int]:
    """`progress` with this verdict's stars counted: a worse setup never takes stars away."""
    out = dict(progress)
    if mission is not None and verdict is not None and verdict.stars > out.get(mission.id, 0):
        out[mission.id] = verdict.stars
    return out


def panel_html(mission: Mission | None, verdict: Verdict | None, progress: Mapping[str, int],
               open_ids: frozenset[str]) -> str:
    """The missions panel: the list (open, locked, stars), and the chosen mission with its verdict."""
    detail = '<p class="hint">Pick a mission to get a broken setup to fix, or keep exploring in free play.</p>'
    if mission is not None and verdict is not None:
        detail = _detail(mission, verdict)
    items = []
    for n, m in enumerate(MISSIONS, 1):
        stars = progress.get(m.id, 0)
        picked = mission is not None and m.id == mission.id
        shown = f"{n}. {html.escape(m.title)} <span class=\"stars\" aria-label=\"{stars} of 3 stars\">{_stars(stars)}</span>"
        if m.id in open_ids:
            items.append(f'<li><button type="button" class="mission{" chosen" if picked else ""}" '
                         f'data-action="select_mission" data-mission="{m.id}" aria-pressed="{str(picked).lower()}" '
                         f'data-stars="{stars}">{shown}</button></li>')
        else:
            items.append(f'<li><button type="button" class="mission locked" disabled data-mission="{m.id}" '
                         f'title="Pass {html.escape(_still_needed(m, progress))} to unlock this one">{LOCK} {shown}</button></li>')
    free = "" if mission is None else \
        '<li><button type="button" class="mission" data-action="select_mission" data-mission="">Free play</button></li>'
    return ('<div class="mission-head"><h2>Missions</h2>'
            '<button type="button" class="reset" data-action="reset_progress">Reset progress</button></div>'
            f'<ol class="mission-list">{"".join(items)}{free}</ol>'
            f'<div class="mission-detail">{detail}</div>')


def _still_needed(mission: Mission, progress: Mapping[str, int]) -> str:
    """The prerequisites of `mission` without a star, by title: 'A', or 'A' and 'B'."""
    missing = [find_mission(r, MISSIONS) for r in mission.requires if progress.get(r, 0) < 1]
    titles = [f"'{m.title}'" for m in missing if m is not None] or ["the missions before it"]
    return titles[0] if len(titles) == 1 else ", ".join(titles[:-1]) + " and " + titles[-1]


def _detail(mission: Mission, verdict: Verdict) -> str:
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
