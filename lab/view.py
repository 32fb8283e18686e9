"""The page's view state: from the page's state to plain JSON patches.

Runs in the browser under Pyodide (in a Web Worker) and in CPython at build
time, so the first paint and every later one come from the same code.
Standard library, `model` and `missions` only: no Panel, no Bokeh here.

One request from the page: `{"hash": <current URL hash>, "controls":
{model name: value} or null, "action": {...} or null}`. The hash is the one
place the state lives; controls and actions change it. The answer:
`{"hash", "notices", "summary", "patches": {"bokeh": {model name: {property:
value}}, "dom": {CSS selector: {"text"|"html"|"attrs": ...}}}}`, which one
generic function in `static/bridge.js` applies.
"""

import html
import json
import math
from dataclasses import dataclass
from typing import Any

from model import ROUTERS, Result, Scenario, ScenarioError, simulate

from .missionview import ACTIONS as MISSION_ACTIONS
from .missionview import apply_action as apply_mission_action
from .missionview import mission_patches, read_progress
from .urlstate import read_hash, write_hash

__all__ = ["CONTROLS", "EVENT_INPUTS", "METRICS", "Control", "handle", "handle_json", "render"]


@dataclass(frozen=True, slots=True)
class Control:
    """A page widget bound to one scenario key."""

    key: str  # dotted scenario key
    label: str
    prop: str  # the Bokeh property holding its value: "value" or "active"
    options: tuple[str, ...] = ()  # for an index-valued `active`: the value of each choice
    labels: tuple[str, ...] = ()
    start: float = 0.0  # sliders: range and step
    end: float = 0.0
    step: float = 0.0

    @property
    def name(self) -> str:
        return "ctl:" + self.key


CONTROLS = (
    Control("fleet.cache", "Prefix cache", "active"),
    Control("fleet.memory_gb", "Prefix memory per replica (GB)", "value", start=0.25, end=16, step=0.25),
    Control("fleet.replicas", "Replicas", "value", start=1, end=16, step=1),
    Control("router.kind", "Router", "value", options=tuple(ROUTERS), labels=tuple(r.label for r in ROUTERS.values())),
    Control("router.spill_threshold_s", "Spill threshold (s of backlog)", "value", start=0, end=5, step=0.1),
    Control("dynamic_text", "Dynamic text in the prompt", "active", options=("none", "top", "bottom"),
            labels=("None", "Top", "Bottom")),
    Control("traffic.session_rate", "New sessions per second", "value", start=0.25, end=12, step=0.25),
    Control("seed", "Seed", "value", start=0, end=2**31 - 1, step=1),
)
SPILL_OFF = "ctl:router.spill_off"  # checkbox: never spill (the threshold key's "off")

# Inputs for the event buttons (not scenario keys): start, duration, factor.
EVENT_INPUTS = {"evt:at": 60.0, "evt:duration": 60.0, "evt:factor": 3.0}

METRICS = (  # headline: result key, label, how to show it
    ("hit_rate", "Hit rate", "{:.1%}"),
    ("ttft_p50_ms", "TTFT p50", "{:,.0f} ms"),
    ("ttft_p99_ms", "TTFT p99", "{:,.0f} ms"),
    ("throughput_rps", "Throughput", "{:.2f} req/s"),
    ("replica_count", "Replicas", "{:d}"),
)

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
EVENT_COLOURS = {"timestamp": "#d62728", "surge": "#9467bd", "burst": "#ff7f0e"}
EVENT_NAMES = {"timestamp": "Timestamp at the top", "surge": "Tenant surge", "burst": "Burst"}


# -- entry points ------------------------------------------------------------

def handle_json(request: str) -> str:
    """`handle` over JSON text: what the worker calls."""
    return json.dumps(handle(json.loads(request)), separators=(",", ":"))


def handle(request: dict) -> dict:
    """Apply controls or an action to the hash's state, simulate, and describe the page."""
    state = read_hash(str(request.get("hash") or ""))
    scenario, page, notices = state.scenario, dict(state.page), list(state.notices)
    progress = read_progress(request.get("progress"))
    controls = request.get("controls")
    if isinstance(controls, dict) and controls:
        scenario = _apply_controls(scenario, controls, notices)
    action = request.get("action")
    if isinstance(action, dict) and action.get("type") in MISSION_ACTIONS:
        scenario, progress = apply_mission_action(action, scenario, page, progress, notices)
    elif isinstance(action, dict) and action:
        scenario = _apply_action(scenario, action, notices)
    return render(_within_budget(scenario, notices), page, notices, progress)


PAGE_BUDGET = 40_000  # requests the page simulates per change at most (about a second in a browser)


def expected_requests(scenario: Scenario) -> float:
    """About how many requests a scenario sends: sessions (bursts included) times turns."""
    seconds = scenario.duration_s
    for e in scenario.events_of("burst"):
        seconds += (min(e.ends_s(), scenario.duration_s) - e.at_s) * (e.factor - 1)
    return scenario.traffic.session_rate * seconds * scenario.traffic.turns_mean


def _within_budget(scenario: Scenario, notices: list[str]) -> Scenario:
    """Keep the page responsive: a setup far bigger than the lab's goes back to the default size."""
    estimate = expected_requests(scenario)
    if estimate <= PAGE_BUDGET:
        return scenario
    default = Scenario()
    notices.append(f"That setup would simulate about {estimate:,.0f} requests, more than the page runs per "
                   f"change ({PAGE_BUDGET:,}); using the default duration and rate. The command line "
                   "(prefix-lab run) runs setups of any size.")
    return scenario.with_values({"duration_s": default.duration_s, "traffic.session_rate": default.traffic.session_rate,
                                 "traffic.turns_mean": default.traffic.turns_mean,
                                 "events": [e for e in scenario.events if e.at_s < default.duration_s]})


def render(scenario: Scenario, page: dict | None = None, notices: list[str] | None = None,
           progress: dict[str, int] | None = None) -> dict:
    """The full page description for a scenario (and the missions panel, with `progress`)."""
    page = dict(page or {})
    notices = list(notices or [])
    result = simulate(scenario)
    bokeh: dict[str, dict] = {}
    dom: dict[str, dict] = {}
    _controls_patch(scenario, bokeh)
    progress, mission = mission_patches(scenario, result, page, progress or {}, notices, bokeh, dom)
    _charts_patch(scenario, result, bokeh)
    summary = _summary(result)
    for key, _, fmt in METRICS:
        dom[f'[data-metric="{key}"]'] = {"text": fmt.format(summary[key]), "attrs": {"data-value": _num(summary[key])}}
    dom["#events-list"] = {"html": _events_html(scenario, removable=mission is None or "events" in mission.controls)}
    dom["#notices"] = {"html": "".join(f"<p>{html.escape(n)}</p>" for n in notices)}
    dom["#readout"] = {"text": _readout(scenario, result)}
    return {"hash": write_hash(scenario, page), "notices": notices, "summary": summary, "progress": progress,
            "patches": {"bokeh": bokeh, "dom": dom}}


# -- from the page to the state -----------------------------------------------

def _apply_controls(scenario: Scenario, controls: dict, notices: list[str]) -> Scenario:
    values: dict[str, str] = {}
    for c in CONTROLS:
        if c.name not in controls:
            continue
        raw = controls[c.name]
        if c.options and c.prop == "active":  # the index of the chosen option
            if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < len(c.options):
                values[c.key] = c.options[raw]
        elif c.options:
            if raw in c.options:
                values[c.key] = raw
        elif isinstance(raw, bool):
            values[c.key] = "true" if raw else "false"
        elif raw is not None:
            values[c.key] = str(raw)
    if controls.get(SPILL_OFF):
        values["router.spill_threshold_s"] = "off"
    for key, text in values.items():  # one by one: a bad value leaves the rest standing
        try:
            scenario = scenario.with_text({key: text})
        except ScenarioError as exc:
            notices.append(str(exc))
    return scenario


def _apply_action(scenario: Scenario, action: dict, notices: list[str]) -> Scenario:
    kind = action.get("type")
    events: list[Any] = list(scenario.events)  # Event values; with_values takes them as they are
    if kind == "add_event":
        event_kind = action.get("kind")
        inputs = action.get("inputs") or {}
        at = _number(inputs.get("evt:at"), EVENT_INPUTS["evt:at"])
        duration = _number(inputs.get("evt:duration"), EVENT_INPUTS["evt:duration"])
        factor = _number(inputs.get("evt:factor"), EVENT_INPUTS["evt:factor"])
        new = {"kind": event_kind, "at_s": at}
        if event_kind in ("surge", "burst"):
            new["duration_s"] = duration
        if event_kind == "burst":
            new["factor"] = factor
        try:
            return scenario.with_values({"events": [*events, new]})
        except ScenarioError as exc:
            notices.append(f"Could not add that event: {exc}")
            return scenario
    if kind == "remove_event":
        index = action.get("index")
        if isinstance(index, int) and 0 <= index < len(events):
            del events[index]
        return scenario.with_values({"events": events})
    if kind == "clear_events":
        return scenario.with_values({"events": []})
    notices.append(f"Unknown action {str(kind)[:40]!r} ignored.")
    return scenario


def _number(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


# -- from the state to the page -------------------------------------------------

def _controls_patch(scenario: Scenario, bokeh: dict) -> None:
    for c in CONTROLS:
        value = scenario.get(c.key)
        if c.key == "router.spill_threshold_s":
            bokeh[SPILL_OFF] = {"active": value is None, "disabled": scenario.router.kind != "cache_aware"}
            shown = 1.0 if value is None else value
            bokeh[c.name] = {"value": shown, "end": max(c.end, shown),
                             "disabled": value is None or scenario.router.kind != "cache_aware"}
        elif c.prop == "active" and c.options:
            bokeh[c.name] = {"active": c.options.index(value)}
        elif c.prop == "active":
            bokeh[c.name] = {"active": bool(value)}
        elif c.options or c.key == "seed":  # a choice, or a number typed in: no range to stretch
            bokeh[c.name] = {"value": value}
        else:
            bokeh[c.name] = {"value": value, "start": min(c.start, value), "end": max(c.end, value)}
    bokeh["ctl:fleet.memory_gb"]["disabled"] = not scenario.fleet.cache
    for patch in bokeh.values():
        patch.setdefault("disabled", False)  # re-enable whatever a mission had locked
    bokeh["evt:at"] = {"high": scenario.duration_s - 1}  # keep an event's start inside the run


def _charts_patch(scenario: Scenario, result: Result, bokeh: dict) -> None:
    s = result.series
    mid = [round(t + s.bin_s / 2, 3) for t in s.start_s]
    # Empty bins are None (null in JSON); the bridge turns them into NaN, which Bokeh draws as a gap.
    bokeh["src:ttft"] = {"data": {"t": mid, "p50": list(s.ttft_p50_ms), "p99": list(s.ttft_p99_ms)}}
    bokeh["src:hit"] = {"data": {"t": mid, "hit": [None if h is None else round(h * 100, 3) for h in s.hit_rate]}}
    bokeh["src:backlog"] = {"data": {
        "xs": [s.start_s[1:] + (round(s.start_s[-1] + s.bin_s, 6),)] * len(s.replica_backlog_s),
        "ys": [list(row) for row in s.replica_backlog_s],
        "color": [PALETTE[i % len(PALETTE)] for i in range(len(s.replica_backlog_s))],
        "label": [f"replica {i}" for i in range(len(s.replica_backlog_s))],
    }}
    ev = scenario.events
    bokeh["src:events"] = {"data": {
        "left": [e.at_s for e in ev],
        "right": [min(e.ends_s(), scenario.duration_s) for e in ev],
        "color": [EVENT_COLOURS[e.kind] for e in ev],
        "label": [EVENT_NAMES[e.kind] for e in ev],
    }}
    bokeh["src:dist"] = {"data": _histogram([r.ttft_ms for r in result.records])}


def _histogram(ttfts: list[float]) -> dict:
    """Counts of TTFT in log-spaced bins (ten per decade), from the fastest to the slowest."""
    if not ttfts:
        return {"left": [], "right": [], "count": [], "share": []}
    lo = math.floor(math.log10(max(min(ttfts), 1.0)) * 10)
    hi = math.floor(math.log10(max(max(ttfts), 1.0)) * 10) + 1
    counts = [0] * (hi - lo)
    for t in ttfts:
        counts[min(hi - lo - 1, max(0, math.floor(math.log10(max(t, 1.0)) * 10) - lo))] += 1
    edges = [round(10 ** ((lo + k) / 10), 3) for k in range(hi - lo + 1)]
    return {"left": edges[:-1], "right": edges[1:], "count": counts,
            "share": [round(c / len(ttfts) * 100, 3) for c in counts]}


def _summary(result: Result) -> dict:
    data = result.summary()
    data["replica_count"] = len(result.replicas)
    return data


def _readout(scenario: Scenario, result: Result) -> str:
    rate = scenario.traffic.session_rate * scenario.traffic.turns_mean
    return (f"{result.requests:,} requests in {scenario.duration_s:g} s (about {rate:.1f} per second); "
            f"{result.prefill_gpu_s:,.1f} GPU-seconds of prefill, {result.recompute_gpu_s:,.1f} of them "
            f"recomputing tokens another replica held.")


def _events_html(scenario: Scenario, removable: bool = True) -> str:
    if not scenario.events:
        return '<li class="empty">No events: steady traffic.</li>'
    items = []
    for i, e in enumerate(scenario.events):
        if e.kind == "timestamp":
            what = f"{EVENT_NAMES[e.kind]} from {e.at_s:g} s"
        elif e.kind == "surge":
            what = f"{EVENT_NAMES[e.kind]}, {e.at_s:g}–{e.ends_s():g} s"
        else:
            what = f"{EVENT_NAMES[e.kind]} ×{e.factor:g}, {e.at_s:g}–{e.ends_s():g} s"
        button = (f'<button type="button" data-action="remove_event" data-index="{i}" '
                  f'aria-label="Remove {html.escape(what)}">Remove</button>') if removable else ""
        items.append(f'<li class="event {e.kind}"><span>{html.escape(what)}</span> {button}</li>')
    return "".join(items)


def _num(value: Any) -> str:
    """The unformatted number, as `prefix-lab run --json` writes it."""
    return json.dumps(value)
