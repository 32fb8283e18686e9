"""What a mission teaches besides its verdict: the guess asked before its first run, its hints, and where the
player's setup lands among every setup its grid allows.

The distributions come from the build's sweep (`lab.site.missionsweep`, `mission-sweeps.json` in the site). The
page fetches that file the first time a mission is open and hands it to the view like a trace (files key
`SWEEPS_KEY`); until it arrives, or on a site built without it, the panel simply leaves the landscape out.

`landscape()` is the chart under the missions panel: every swept setup on the mission's two conflicting
figures (`Mission.tradeoff`), coloured by the stars it earns, the Pareto front joined by a line, the broken
start, and the player's setup. It says which setups are not beaten on both figures at once, never which is
best: that is the player's call.

Standard library, `missions` and `model` only: this runs in the browser.
"""

import html
import json
import math
from collections.abc import Mapping
from typing import Any

from lab.page import missionview
from lab.page.missionview import ASKING, FREE_GUESSES, HINT_AFTER_S, REVEALED, Memo, Teach, guessed
from lab.page.store import STORE
from lab.page.tracepage import as_bytes
from missions import FIGURES, Mission, Prediction, Verdict, beats, beats_rule, figures, measure
from model import Result, Scenario

__all__ = ["SWEEPS_KEY", "SWEEPS_URL", "asked", "empty_landscape", "free", "landscape", "question_html", "read_sweeps",
           "teach"]

SWEEPS_KEY = "sweeps"  # the page's files: the build's distributions, once fetched
SWEEPS_URL = "mission-sweeps.json"  # where the build writes them (lab.site.missionsweep.SITE_FILE)
SHARES = ("hit_rate", "ttft_slo_met", "tbt_slo_met", "router_overestimate")  # drawn in per cent
STAR_COLOURS = ("#bbbbbb", "#e69f00", "#56b4e9", "#009e73")  # by stars: none, one, two, three (Okabe-Ito)


def read_sweeps(source: Any) -> dict[str, dict[str, Any]]:
    """The distributions by mission id from the fetched file (a `lab.page.tracepage.Source`), parsed once.

    A file that is not the build's distributions gives none: the panel then shows no landscape."""
    def parse() -> dict[str, dict[str, Any]]:
        try:
            parsed = json.loads(as_bytes(source.read(0, source.size)))
            return {d["id"]: d for d in parsed["missions"] if isinstance(d, dict) and "id" in d}
        except (ValueError, KeyError, TypeError):
            return {}

    return STORE.sweeps.remember((str(source.name), int(source.size)), parse)


def teach(page: Mapping[str, str], memo: Memo, mission: Mission, verdict: Verdict | None,
          start: Result | None, standing: str) -> Teach:
    """The panel's teaching state for this request: asking, the guess and its truth (the figure on the
    broken start, whose run is `start`), hints shown, whether to offer one."""
    asking = page.get("guess") == ASKING and mission.predict is not None
    guess = guessed(page) if mission.predict is not None else None
    truth = None
    if guess is not None and start is not None and mission.predict is not None:
        truth = figures(mission.start, start)[mission.predict.figure]
    shown = page.get("hint", "0")
    hints = min(len(mission.hints), int(shown)) if shown.isdigit() else 0
    offer = memo.since is not None and missionview.clock() - memo.since >= HINT_AFTER_S and not (verdict and verdict.passed)
    return Teach(asking, guess, truth, hints, offer, standing)


def asked(mission: Mission | None, page: Mapping[str, str]) -> Prediction | None:
    """The prediction the page is asking for: the mission's, or in free play the figure the player chose."""
    if mission is not None:
        return mission.predict
    return FREE_GUESSES.get(page.get("guess_figure", ""))


def question_html(mission: Mission | None, page: Mapping[str, str]) -> str:
    """The question above the guess's slider; in free play with a choice of the figure to guess."""
    p = asked(mission, page)
    if p is None:
        return ""
    if mission is not None:
        return html.escape(p.question)
    choices = "".join(
        f'<button type="button" data-action="guess_figure" data-figure="{f}" aria-pressed="{str(f == p.figure).lower()}">'
        f"{html.escape(FIGURES[f][0])}</button> " for f in FREE_GUESSES)
    return (f'{html.escape(p.question)}<br><span class="choices" role="group" aria-label="The figure to guess">'
            f"{choices}</span>")


def free(page: Mapping[str, str], result: Result) -> Teach:
    """Free play's guess: asking, made and waiting for a change, or checked against the run after it."""
    p = FREE_GUESSES.get(page.get("guess_figure", ""))
    if p is None:
        return Teach()
    if page.get("guess") == ASKING:
        return Teach(asking=True, figure=p.figure)
    checked = page.get("guess_base", "").startswith(REVEALED)
    return Teach(guess=guessed(page), truth=getattr(result, p.figure) if checked else None, figure=p.figure)


def _scale(figure: str) -> float:
    return 100.0 if figure in SHARES else 1.0


def _label(figure: str) -> str:
    label = FIGURES[figure][0]
    return f"{label} (%)" if figure in SHARES else f"{label} (ms)" if figure.endswith("_ms") else label


def empty_landscape() -> dict[str, dict]:
    """The chart's patches with nothing to draw (free play, or no distributions)."""
    none: dict[str, list] = {"x": [], "y": [], "color": [], "stars": [], "setup": []}
    return {"src:land": {"data": none}, "src:land_front": {"data": {"x": [], "y": []}},
            "src:land_start": {"data": {"x": [], "y": []}}, "src:land_you": {"data": {"x": [], "y": []}},
            "src:land_over": {"data": {"x": [], "y": [], "label": []}}, "yr:land": {"start": 0, "end": 1},
            "ax:land_x": {"axis_label": ""}, "ax:land_y": {"axis_label": ""}}


SQUASH = 4.0  # a setup more than this many times the median of the chart's y values is marked above it


def _nice(x: float) -> float:
    """`x` rounded up to two significant figures."""
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / scale - 1e-9) * scale


def _y_axis(ys: list[float], show: Any, xs: list[float]) -> dict[str, dict]:
    """The chart's y range from 0, and marks for the setups above it: a few setups far worse than the rest
    (a fleet with no cache at all) would otherwise squash every other point against the axis."""
    ordered = sorted(ys)
    middle = ordered[len(ordered) // 2] if ordered else 0.0
    kept = [y for y in ys if middle <= 0 or y <= SQUASH * middle]
    top = _nice(max(kept) * 1.1) if kept and max(kept) > 0 else 1.0
    above: dict[float, float] = {}
    for x, y in zip(xs, ys):
        if y > top and y > above.get(x, -math.inf):
            above[x] = y
    marks = sorted(above)
    highest = max(marks, key=above.__getitem__) if marks else None
    return {"yr:land": {"start": 0, "end": top},
            "src:land_over": {"data": {"x": marks, "y": [top * 0.96] * len(marks),
                                       "label": [f"above: {show(above[x])}" if x == highest else "" for x in marks]}}}


def landscape(mission: Mission, dist: dict[str, Any], scenario: Scenario, result: Result) -> tuple[dict[str, dict], str]:
    """The chart's patches and a sentence on where the setup lands ("beats N% of the M setups swept")."""
    fx, fy = dist["tradeoff"]
    sx, sy = _scale(fx), _scale(fy)
    rows = dist["setups"]
    setup = [", ".join(f"{k.split('.')[-1]} {v}" for k, v in r["settings"].items()) for r in rows]
    cols = {"x": [r["figures"][fx] * sx for r in rows], "y": [r["figures"][fy] * sy for r in rows],
            "color": [STAR_COLOURS[r["stars"]] for r in rows], "stars": [r["stars"] for r in rows], "setup": setup}
    front = sorted(dist["pareto"], key=lambda i: (rows[i]["figures"][fx], rows[i]["figures"][fy]))
    mine = figures(scenario, result)
    start = dist["start"]["figures"]
    standing = beats(dist, measure(mission, scenario, result))  # rounded as the stored rows are, so ties match
    patches: dict[str, dict] = {
        "src:land": {"data": cols},
        "src:land_front": {"data": {"x": [cols["x"][i] for i in front], "y": [cols["y"][i] for i in front]}},
        "src:land_start": {"data": {"x": [start[fx] * sx], "y": [start[fy] * sy]}},
        "src:land_you": {"data": {"x": [mine[fx] * sx], "y": [mine[fy] * sy]}},
        "ax:land_x": {"axis_label": _label(fx)}, "ax:land_y": {"axis_label": _label(fy)},
    }
    show_x, show_y = FIGURES[fx][1], FIGURES[fy][1]
    points = [*zip(cols["x"], cols["y"]), (start[fx] * sx, start[fy] * sy), (mine[fx] * sx, mine[fy] * sy)]
    patches.update(_y_axis([y for _, y in points], lambda v: show_y(v / sy), [x for x, _ in points]))
    words = (f'<p class="standing" data-beats="{standing["beats"]:.6g}">Your setup ({html.escape(show_x(mine[fx]))}, '
             f"{html.escape(show_y(mine[fy]))}) beats <strong>{standing['beats']:.0%}</strong> of the "
             f"{standing['swept']:,} setups this mission's grid allows"
             + (f" and ties {standing['ties']:.0%}" if standing["ties"] else "")
             + f' (<abbr title="{html.escape(beats_rule(mission))}">how setups are compared</abbr>). The chart below '
             "places it among them.</p>")
    return patches, words
