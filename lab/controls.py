"""The page's controls, declared once: which key each widget sets, and how it behaves.

A `Control` binds one widget (Bokeh tag `ctl:<key>`) to one scenario key.
Its choices and its range are the key's own declaration (`model.spec_of`):
a slider offers the narrower `spec.page` range, and stretches to show a
value a link set outside it. Each special behaviour is a field here, read by
`lab.layout` (which widgets to build), `lab.view` (through `read_controls`
and `control_patches`) and by no one else; `static/bridge.js` names none:

- `enabled_when=(key, value)`: enabled only while another key holds that
  value (prefix memory needs the cache; the spill threshold needs the
  cache-aware router).
- `off_label`: the key may be `off` (its spec says so), and a checkbox with
  this label (tag `ctl:<key>:off`) switches it. Ticked, the key is off and
  the control is disabled; unticked, the key takes the control's value if
  the same change sends one, else the key's default.

Standard library and `model` only: this runs in the browser too.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from model import BURST_FACTOR, EVENT_MAX_DURATION_S, PRESETS, ROUTERS, Scenario, format_text, spec_of

__all__ = ["CONTROLS", "EVENT_INPUTS", "Control", "EventInput", "control_patches", "event_input_patches",
           "read_controls", "read_event_inputs"]

WIDGETS = ("checkbox", "slider", "number", "select", "buttons")


@dataclass(frozen=True, slots=True)
class Control:
    """A page widget bound to one scenario key."""

    key: str  # dotted scenario key
    label: str
    widget: str  # one of WIDGETS: a switch, a slider, a typed number, a menu, a row of buttons
    labels: tuple[str, ...] = ()  # a menu's or a button row's text for each of the key's choices
    enabled_when: tuple[str, Any] | None = None  # (key, value): enabled only while that key holds that value
    off_label: str = ""  # a checkbox with this label sets the key to off

    def __post_init__(self) -> None:
        if self.widget not in WIDGETS:
            raise ValueError(f"{self.key}: unknown widget {self.widget!r}")
        if self.off_label and not spec_of(self.key).off:
            raise ValueError(f"{self.key}: an off switch needs a key that may be off")

    @property
    def name(self) -> str:
        return "ctl:" + self.key

    @property
    def off_name(self) -> str:
        """The tag of the off switch (with `off_label`)."""
        return self.name + ":off"

    @property
    def prop(self) -> str:
        """The Bokeh property holding the widget's value."""
        return "active" if self.widget in ("checkbox", "buttons") else "value"

    @property
    def options(self) -> tuple[str, ...]:
        return spec_of(self.key).choices

    @property
    def range(self) -> tuple[float, float, float]:
        """(start, end, step) the page offers: the key's declared page range."""
        page = spec_of(self.key).page
        if page is None:
            raise ValueError(f"{self.key} declares no page range")
        return page

    @property
    def default(self) -> Any:
        return Scenario().get(self.key)


CONTROLS = (
    Control("fleet.cache", "Prefix cache", "checkbox"),
    Control("fleet.memory_gb", "Prefix memory per replica (GB)", "slider", enabled_when=("fleet.cache", True)),
    Control("fleet.replicas", "Replicas", "slider"),
    Control("router.kind", "Router", "select", labels=tuple(r.label for r in ROUTERS.values())),
    Control("router.spill_threshold_s", "Spill threshold (s of backlog)", "slider",
            enabled_when=("router.kind", "cache_aware"), off_label="Never spill (always follow the cache)"),
    Control("router.view", "What the router knows", "buttons", labels=("The caches", "Its own memory")),
    Control("router.view_ttl_s", "Router forgets after (s)", "slider", enabled_when=("router.view", "approximate"),
            off_label="Never forget"),
    Control("router.load_factor", "Load bound (× a fair share)", "slider", enabled_when=("router.kind", "bounded_hash")),
    Control("router.load_multiple", "Reroute past (× median load)", "slider",
            enabled_when=("router.kind", "prefix_load_aware")),
    Control("router.cache_threshold", "Follow a match covering more than", "slider", enabled_when=("router.kind", "sglang")),
    Control("router.balance_abs_threshold", "Imbalanced past a spread of (requests)", "slider",
            enabled_when=("router.kind", "sglang")),
    Control("router.balance_rel_threshold", "…and a ratio of", "slider", enabled_when=("router.kind", "sglang")),
    Control("fleet.decode", "Serving mode: decode answers in batches", "checkbox"),
    Control("hardware.preset", "Model and GPU", "select", labels=tuple(p.label for p in PRESETS.values())),
    Control("dynamic_text", "Dynamic text in the prompt", "buttons",
            labels=tuple(c.capitalize() for c in spec_of("dynamic_text").choices)),
    Control("traffic.session_rate", "New sessions per second", "slider"),
    Control("seed", "Seed", "number"),
)


@dataclass(frozen=True, slots=True)
class EventInput:
    """A number the event buttons read (not a scenario key): an event's start, duration or factor."""

    name: str  # Bokeh tag, `evt:<what>`
    label: str
    default: float
    step: float
    low: float
    high: float | None  # None: set per scenario (a start must come before the run ends)


EVENT_INPUTS = (
    EventInput("evt:at", "Start (s)", 60.0, 10.0, 0.0, None),
    EventInput("evt:duration", "Lasting (s)", 60.0, 10.0, 1.0, EVENT_MAX_DURATION_S),
    EventInput("evt:factor", "Burst ×", 3.0, 0.5, *BURST_FACTOR),
)


# -- from the widgets to the keys ------------------------------------------------

def read_controls(controls: Mapping[str, Any]) -> dict[str, str]:
    """Key -> text for each control whose widget value is in `controls` (the model judges the text)."""
    values: dict[str, str] = {}
    for c in CONTROLS:
        if c.name in controls:
            text = _text(c, controls[c.name])
            if text is not None:
                values[c.key] = text
        if c.off_label and c.off_name in controls:
            off = controls[c.off_name]
            if off is True:
                values[c.key] = "off"
            elif off is False and c.key not in values:
                values[c.key] = format_text(c.key, c.default)
    return values


def _text(c: Control, raw: Any) -> str | None:
    if c.widget == "buttons":  # the index of the chosen option
        ok = isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < len(c.options)
        return c.options[raw] if ok else None
    if c.widget == "select":
        return raw if raw in c.options else None
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return None if raw is None else str(raw)


def read_event_inputs(inputs: Mapping[str, Any]) -> dict[str, float]:
    """The event inputs' values by name; a missing or non-finite one takes its default."""
    return {i.name: _number(inputs.get(i.name), i.default) for i in EVENT_INPUTS}


def _number(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


# -- from the keys to the widgets ------------------------------------------------

def control_patches(scenario: Scenario, allowed: frozenset[str] | None = None) -> dict[str, dict]:
    """Each control's widget props for `scenario`; with `allowed` (a mission's keys) the others are disabled."""
    out: dict[str, dict] = {}
    for c in CONTROLS:
        value = scenario.get(c.key)
        enabled = (allowed is None or c.key in allowed) and (
            c.enabled_when is None or scenario.get(c.enabled_when[0]) == c.enabled_when[1])
        if c.widget == "checkbox":
            patch: dict[str, Any] = {"active": bool(value)}
        elif c.widget == "buttons":
            patch = {"active": c.options.index(value)}
        elif c.widget == "slider":
            shown = c.default if value is None else value
            start, end, _ = c.range
            patch = {"value": shown, "start": min(start, shown), "end": max(end, shown)}
        else:  # a menu, or a number typed in: no range to stretch
            patch = {"value": value}
        out[c.name] = {**patch, "disabled": not enabled or value is None}
        if c.off_label:
            out[c.off_name] = {"active": value is None, "disabled": not enabled}
    return out


def event_input_patches(scenario: Scenario) -> dict[str, dict]:
    """Keep an event's start inside the run."""
    return {i.name: {"high": scenario.duration_s - 1} for i in EVENT_INPUTS if i.high is None}
