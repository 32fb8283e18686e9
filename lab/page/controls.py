"""The page's controls, declared once: which key each widget sets, and how it behaves.

A `Control` binds one widget (Bokeh tag `ctl:<key>`) to one scenario key.
Its choices and its range are the key's own declaration (`model.spec_of`):
a slider offers the narrower `spec.page` range, and stretches to show a
value a link set outside it. Each special behaviour is a field here, read by
`lab.site.layout` (which widgets to build), `lab.page.view` (through `read_controls`
and `control_patches`) and by no one else; `static/bridge.js` names none:

- `enabled_when=(key, value)`: enabled only while another key holds that
  value (prefix memory needs the cache; the spill threshold needs the
  cache-aware router).
- `off_label`: the key may be `off` (its spec says so), and a checkbox with
  this label (tag `ctl:<key>:off`) switches it. Ticked, the key is off and
  the control is disabled; unticked, the key takes the control's value if
  the same change sends one, else the key's default.

Each control sits in a box (tag `box:<key>`) with a help line (name
`help:<key>`) from `lab.page.glossary`; a mission hides the boxes of the keys it
keeps fixed. The fleet's column opens with the seed's own controls; the others
wait in closed sections (`SECTIONS`, a `<details>` each) that a person opens,
and that a mission opens where its own controls wait (`section_patches`). A slider's value is rounded to its step before the model sees
it, so a URL never carries float noise (`3.9999999999999996`). The event
inputs are checked against their bounds when an event is added: a value out
of range or not a number is replaced, and the player is told what was used.

Standard library and `model` only: this runs in the browser too.
"""

import html
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lab.page.glossary import brief
from model import BURST_FACTOR, EVENT_MAX_DURATION_S, PRESETS, ROUTERS, Event, Scenario, format_text, spec_of

__all__ = ["CONTROLS", "EVENT_INPUTS", "EVENT_NAMES", "SECTIONS", "Control", "EventInput", "check_event_inputs", "control_of",
           "control_patches", "describe", "describe_event", "event_input_patches", "for_people", "read_controls", "section_patches"]

WIDGETS = ("checkbox", "slider", "number", "select", "buttons")


def in_words(text: str) -> str:
    """A note of the model's (written for the command line, in keys) as the page says it: `key=value` and bare
    keys by their controls' names, presets by their labels, and no source paths."""
    for name, p in PRESETS.items():
        text = text.replace(f"{name} ({p.label})", p.label)
    text = _PATH.sub("", text)

    def pair(m: re.Match[str]) -> str:
        c = control_of(m.group(1))
        if c is None:
            return m.group(0)
        value = m.group(2)
        if c.widget == "checkbox":
            shown = "on" if value == "true" else "off"
        else:
            shown = c.labels[c.options.index(value)] if c.labels and value in c.options else value + c.unit
        return f"{c.words} set to {shown}"

    text = _PAIR.sub(pair, text)
    text = _KEY.sub(lambda m: c.words if (c := control_of(m.group(1))) else m.group(0), text)
    return _PRESET.sub(lambda m: PRESETS[m.group(1)].label, text)


def preset_words(name: str) -> str:
    """A model-and-GPU preset in a few figures: its size, its KV a token, its GPU's peaks ("" for the lab's)."""
    p = PRESETS[name]
    if not p.tflops:  # the lab's own preset: its label holds its figures
        return ""
    kv_kib = 2 * p.layers * p.kv_heads * p.head_dim * p.bytes_per_value / 1024
    return (f"{p.params / 1e9:,.1f}B parameters, {kv_kib:,.0f} KiB of KV a token; {p.tflops:,.0f} TFLOP/s and "
            f"{p.hbm_tb_s:,.2f} TB/s at the GPU's peak.")


@dataclass(frozen=True, slots=True)
class Control:
    """A page widget bound to one scenario key."""

    key: str  # dotted scenario key
    label: str
    widget: str  # one of WIDGETS: a switch, a slider, a typed number, a menu, a row of buttons
    labels: tuple[str, ...] = ()  # a menu's or a button row's text for each of the key's choices
    enabled_when: tuple[str, Any] | None = None  # (key, value or tuple of values): enabled only while the key holds it
    off_label: str = ""  # a checkbox with this label sets the key to off
    short: str = ""  # the name in a sentence ("Prefix memory 4 GB"); the label if empty
    unit: str = ""  # written after a number, with its space: " GB"
    figure: str = ""  # on the full page, the figure (`lab.page.figures`) it sits beside; "" for the fleet's column
    section: str = ""  # in the fleet's column, the closed section (`SECTIONS`) it waits in; "" for the first ones
    trace_end: float = 0  # a slider's end while a trace plays (its prompts and reuse outgrow the lab's chats): 0 none

    def __post_init__(self) -> None:
        if self.widget not in WIDGETS:
            raise ValueError(f"{self.key}: unknown widget {self.widget!r}")
        if self.off_label and not spec_of(self.key).off:
            raise ValueError(f"{self.key}: an off switch needs a key that may be off")
        if self.section and (self.figure or self.section not in SECTIONS):
            raise ValueError(f"{self.key}: unknown section {self.section!r}, or a figure's control in one")

    @property
    def name(self) -> str:
        return "ctl:" + self.key

    def enabled_in(self, scenario: Scenario) -> bool:
        """Whether `enabled_when` lets this control act in `scenario` (a tuple of values: any of them)."""
        if self.enabled_when is None:
            return True
        key, want = self.enabled_when
        value = scenario.get(key)
        return value in want if isinstance(want, tuple) else value == want

    @property
    def off_name(self) -> str:
        """The tag of the off switch (with `off_label`)."""
        return self.name + ":off"

    @property
    def box_name(self) -> str:
        """The tag of the box holding the widget, its off switch and its help line."""
        return "box:" + self.key

    @property
    def help_name(self) -> str:
        """The name of the help line under the widget."""
        return "help:" + self.key

    @property
    def words(self) -> str:
        return self.short or self.label

    def help(self, scenario: Scenario | None = None) -> str:
        """The help line, from the glossary; a menu's explains its chosen option."""
        if self.widget == "select" and scenario is not None:
            value = scenario.get(self.key)
            said = brief(value) or (preset_words(value) if self.key == "hardware.preset" else "")
            return f"{self.labels[self.options.index(value)]}: {said}" if said else brief(self.key)
        return brief(self.key)

    def show(self, value: Any) -> str:
        """A value as people read it: on, Cache-aware, 4 GB, off."""
        if self.widget == "checkbox":
            return "on" if value else "off"
        if self.widget in ("select", "buttons"):
            return self.labels[self.options.index(value)]
        if value is None:
            return "off"
        return f"{value:g}{self.unit}"

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

    def range_for(self, traced: bool) -> tuple[float, float, float]:
        """The range offered while a trace plays (`traced`) or not: the same start and step, so a value rounds
        alike either way; while a trace plays, up to `trace_end`."""
        start, end, step = self.range
        return start, max(end, self.trace_end) if traced else end, step

    @property
    def default(self) -> Any:
        return Scenario().get(self.key)


# The fleet's column opens with the seed's own controls; the rest wait in sections a person opens (a mission
# shows its own controls wherever they wait): section name -> its title.
SECTIONS = {
    "router": "Routers: what they know, their settings",
    "traffic": "Traffic: agents, users, the seed",
    "serving": "Serving mode: decode, split GPUs, targets",
    "hardware": "Model, GPU and links",
}

CONTROLS = (
    Control("fleet.cache", "Prefix cache", "checkbox"),
    # a trace's long prompts and far reuse need more than the lab's chats: the public conversation trace's first
    # 40,000 requests reach 36.4% of their 37.4% ceiling at 64 replicas of 128 GB, 8.3% at 16 of 16 GB
    Control("fleet.memory_gb", "Prefix memory per replica (GB)", "slider", enabled_when=("fleet.cache", True),
            short="Prefix memory", unit=" GB", trace_end=128),
    Control("fleet.replicas", "Replicas", "slider", trace_end=64),
    Control("router.kind", "Router", "select", labels=tuple(r.label for r in ROUTERS.values())),
    Control("router.spill_threshold_s", "Spill threshold (s of backlog)", "slider",
            enabled_when=("router.kind", "cache_aware"), off_label="Never spill (always follow the cache)",
            short="Spill threshold", unit=" s"),
    Control("router.view", "What the router knows", "buttons", labels=("The caches", "Its own memory"),
            short="Router's view", section="router"),
    Control("router.view_ttl_s", "Router forgets after (s)", "slider", enabled_when=("router.view", "approximate"),
            off_label="Never forget", short="Router forgets after", unit=" s", section="router"),
    Control("router.load_factor", "Load bound (× a fair share)", "slider", enabled_when=("router.kind", "bounded_hash"),
            short="Load bound", unit="×", section="router"),
    Control("router.load_multiple", "Reroute past (× median load)", "slider",
            enabled_when=("router.kind", "prefix_load_aware"), short="Reroute past", unit="× median", section="router"),
    Control("router.cache_threshold", "Follow a match covering more than", "slider",
            enabled_when=("router.kind", ("sglang", "vllm_router")), short="Match threshold", section="router"),
    Control("router.balance_abs_threshold", "Imbalanced past a spread of (requests)", "slider",
            enabled_when=("router.kind", ("sglang", "vllm_router")), short="Imbalance spread", section="router"),
    Control("router.balance_rel_threshold", "…and a ratio of", "slider",
            enabled_when=("router.kind", ("sglang", "vllm_router")),
            short="Imbalance ratio", unit="×", section="router"),
    Control("fleet.decode", "Serving mode: decode answers in batches", "checkbox", short="Serving mode", section="serving"),
    Control("hardware.preset", "Model and GPU", "select", labels=tuple(p.label for p in PRESETS.values()),
            short="Model and GPU", section="hardware"),
    Control("dynamic_text", "Dynamic text in the prompt", "buttons",
            labels=tuple(c.capitalize() for c in spec_of("dynamic_text").choices), short="Dynamic text"),
    Control("traffic.session_rate", "New sessions per second", "slider", short="Sessions per second"),
    Control("traffic.kind", "Traffic", "buttons", labels=("Chats", "Agents", "Users"), section="traffic"),
    Control("traffic.agent_rate", "New agent runs per second", "slider", enabled_when=("traffic.kind", "agent"),
            short="Agent runs per second", section="traffic"),
    Control("fleet.fetch", "Fetch a prefix a peer holds over", "select",
            labels=("Never: recompute it", "RDMA", "NVMe", "Host memory"), short="Fetch over", section="hardware"),
    Control("seed", "Seed", "number", section="traffic"),
    Control("traffic.agent_fanout", "Sub-calls per fan-out", "slider", enabled_when=("traffic.kind", "agent"),
            short="Fan-out", section="traffic"),
    Control("traffic.agent_warm_first", "Send the first sub-call alone, the rest at its first token", "checkbox",
            enabled_when=("traffic.kind", "agent"), short="First call first", section="traffic"),
    # beside the article's figures (lab/page/figures/)
    Control("crossover.prompt_tokens", "Prompt (tokens)", "slider", short="Prompt", unit=" tokens",
            figure="crossover"),
    Control("crossover.new_tokens", "Tokens the warm GPU lacks", "slider", short="Missing", unit=" tokens",
            figure="crossover"),
    Control("crossover.queued", "Requests queued on the warm GPU", "slider", short="Queued", figure="crossover"),
    Control("crossover.queued_tokens", "Tokens of each queued request", "slider", short="Queued size",
            unit=" tokens", figure="crossover"),
    Control("transfer.prompt_tokens", "Prompt (tokens)", "slider", short="Prompt", unit=" tokens", figure="transfer"),
    Control("transfer.cached_tokens", "Tokens of it a peer holds", "slider", short="Held by a peer",
            unit=" tokens", figure="transfer"),
    Control("transfer.rdma_gbps", "RDMA (Gbps)", "slider", short="RDMA", unit=" Gbps", figure="transfer"),
    Control("transfer.host_gb_s", "Host memory over PCIe (GB/s)", "slider", short="Host memory", unit=" GB/s",
            figure="transfer"),
    Control("transfer.nvme_gb_s", "NVMe (GB/s)", "slider", short="NVMe", unit=" GB/s", figure="transfer"),
    Control("money.calls", "Calls in the agent run", "slider", short="Calls", figure="api"),
    Control("money.gap_s", "Seconds between calls", "slider", short="Gap", unit=" s", figure="api"),
    Control("money.lifetime_s", "Cache lifetime (s)", "slider", short="Lifetime", unit=" s", figure="api"),
    Control("money.gpu_usd_per_hour", "GPU price ($ an hour)", "slider", short="GPU price", unit=" $/h",
            figure="gpu"),
    # prefill/decode (issue 13)
    Control("fleet.prefill_replicas", "GPUs that only prefill", "slider", enabled_when=("fleet.decode", True),
            short="Prefill replicas", section="serving"),
    Control("fleet.decode_replicas", "GPUs that only decode", "slider", enabled_when=("fleet.decode", True),
            short="Decode replicas", section="serving"),
    Control("fleet.handoff", "KV goes from prefill to decode over", "buttons", labels=("RDMA", "Host memory", "NVMe"),
            enabled_when=("fleet.decode", True), short="Handoff over", section="serving"),
    Control("fleet.queue_order", "Queue order", "buttons", labels=("First come", "Longest prefix"),
            enabled_when=("fleet.decode", True), section="serving"),
    Control("fleet.queue_guard_s", "Starvation guard (s)", "slider",
            enabled_when=("fleet.queue_order", "longest_prefix_first"), short="Starvation guard", unit=" s", section="serving"),
    Control("slo.ttft_ms", "First token within (ms)", "slider", enabled_when=("fleet.decode", True),
            short="TTFT target", unit=" ms", section="serving"),
    Control("slo.tbt_ms", "No gap between tokens over (ms)", "slider", enabled_when=("fleet.decode", True),
            short="TBT target", unit=" ms", section="serving"),
    Control("fleet.token_budget", "Tokens a step may compute", "slider", short="Token budget", unit=" tokens",
            figure="join"),
    Control("roofline.batch", "Decode batch (sequences)", "slider", short="Decode batch", figure="roofline"),
    Control("roofline.prefill_tokens", "Prefill (tokens)", "slider", short="Prefill", unit=" tokens",
            figure="roofline"),
)
_BY_KEY = {c.key: c for c in CONTROLS}


_PATH = re.compile(r" \((?:model|lab|missions)/[\w/]+\.py\)")  # "(model/gpus/gpufits.py)"
_PAIR = re.compile(r"(?<![\w.])([a-z_]+\.[a-z_]+)=([^\s,;)]+)")  # "fleet.replicas=4"
_KEY = re.compile(r"(?<![\w.])([a-z_]+\.[a-z_]+)(?![\w.])")  # "fleet.decode_replicas"
_PRESET = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in PRESETS if n != "lab") + r")(?![\w])")


def control_of(key: str) -> Control | None:
    return _BY_KEY.get(key)


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
    """Key -> text for each control whose widget value is in `controls` (the model judges the text).

    A slider's value is rounded to the slider's step first: Bokeh computes `start + k * step` in binary
    floating point, and `3.9999999999999996` is no value anyone chose.
    """
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
    if raw is None:
        return None
    number = _number(raw)
    if c.widget in ("slider", "number") and number is not None:
        return _on_step(c, number)
    return str(raw)


def _on_step(c: Control, number: float) -> str:
    """`number` rounded to the control's step (counted from its start), written without float noise."""
    start, _, step = c.range
    value = start + round((number - start) / step) * step
    if isinstance(c.default, int) and not isinstance(c.default, bool):
        return str(int(round(value)))
    return repr(round(value, _decimals(step) + _decimals(start)))


def _decimals(x: float) -> int:
    """Decimal places `x` is written with: 0.25 -> 2, 5 -> 0."""
    text = repr(float(x))
    return 0 if text.endswith(".0") else len(text.split(".")[1]) if "e" not in text else 12


def check_event_inputs(inputs: Mapping[str, Any], scenario: Scenario,
                       names: Iterable[str]) -> tuple[dict[str, float], list[str]]:
    """The values of the event inputs `names` as used, and a sentence for each one that was replaced.

    Not a number: its default. Below or above its bounds (a start must fall before the run ends): the bound.
    """
    values, notices = {}, []
    for i in EVENT_INPUTS:
        if i.name not in names:
            continue
        raw, high = inputs.get(i.name), (scenario.duration_s - 1 if i.high is None else i.high)
        number = _number(raw)
        if number is None:
            used = i.default
            typed = "is empty or not a number" if raw in (None, "") else f"{str(raw)[:20]!r} is not a number"
            notices.append(f"{i.label} {typed}; used {used:g}.")
        elif number < i.low:
            used = i.low
            notices.append(f"{i.label} {number:g} is below the lowest allowed, {i.low:g}; used {used:g}.")
        elif number > high:
            used = high
            why = f"the run ends at {scenario.duration_s:g} s" if i.high is None else f"the most allowed is {high:g}"
            notices.append(f"{i.label} {number:g} is too high ({why}); used {used:g}.")
        else:
            used = number
        values[i.name] = used
    return values, notices


def _number(value: Any) -> float | None:
    """A finite number from a widget's value, or None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def for_people(text: str) -> str:
    """A model message with a control's key put as its label: 'fleet.replicas: 900 ...' -> 'Replicas: 900 ...'."""
    key, sep, rest = text.partition(": ")
    c = _BY_KEY.get(key)
    return f"{c.words}: {rest}" if sep and c is not None else text


EVENT_NAMES = {"timestamp": "Timestamp at the top", "surge": "Tenant surge", "burst": "Burst"}


def describe_event(e: Event) -> str:
    """'Tenant surge, 40–140 s' and the like."""
    if e.kind == "timestamp":
        return f"{EVENT_NAMES[e.kind]} from {e.at_s:g} s"
    if e.kind == "surge":
        return f"{EVENT_NAMES[e.kind]}, {e.at_s:g}–{e.ends_s():g} s"
    return f"{EVENT_NAMES[e.kind]} ×{e.factor:g}, {e.at_s:g}–{e.ends_s():g} s"


def describe(scenario: Scenario, keys: Iterable[str]) -> list[str]:
    """'Replicas 3', 'Router Cache-aware', ... for each control among `keys`, in the page's order."""
    wanted = set(keys)
    return [f"{c.words} {c.show(scenario.get(c.key))}" for c in CONTROLS if c.key in wanted]


# -- from the keys to the widgets ------------------------------------------------

def control_patches(scenario: Scenario, allowed: frozenset[str] | None = None, traced: bool = False) -> dict[str, dict]:
    """Each control's widget props for `scenario`; with `allowed` (a mission's keys) the others are disabled and
    their boxes hidden, so that what a mission lets you change fits on one screen with its verdict. While a trace
    plays (`traced`), sliders that declare a `trace_end` reach it."""
    out: dict[str, dict] = {}
    for c in CONTROLS:
        out[c.box_name] = {"visible": allowed is None or c.key in allowed}
        if c.widget == "select":  # its help line follows the chosen option
            out[c.help_name] = {"text": html.escape(c.help(scenario))}
        value = scenario.get(c.key)
        enabled = (allowed is None or c.key in allowed) and c.enabled_in(scenario)
        if c.widget == "checkbox":
            patch: dict[str, Any] = {"active": bool(value)}
        elif c.widget == "buttons":
            patch = {"active": c.options.index(value)}
        elif c.widget == "slider":
            shown = c.default if value is None else value
            start, end, _ = c.range_for(traced)
            # value_throttled is what a slider announces when let go; emptied, so that letting go anywhere
            # (even where the view last put it) announces a change
            patch = {"value": shown, "value_throttled": None, "start": min(start, shown), "end": max(end, shown)}
        else:  # a menu, or a number typed in: no range to stretch
            patch = {"value": value}
        out[c.name] = {**patch, "disabled": not enabled or value is None}
        if c.off_label:
            out[c.off_name] = {"active": value is None, "disabled": not enabled}
    return out


def section_patches(allowed: frozenset[str] | None = None) -> dict[str, dict]:
    """Each section's `<details>` (`#more-<name>`): in free play shown, and open as the person left it (`open`
    None: the bridge remembers it); in a mission (`allowed` its keys) open where its own controls wait, hidden
    where none do."""
    out = {}
    for name in SECTIONS:
        mine = allowed is not None and any(c.section == name and c.key in allowed for c in CONTROLS)
        out[f"#more-{name}"] = {"hidden": allowed is not None and not mine, "open": True if mine else None}
    return out


def event_input_patches(used: Mapping[str, float]) -> dict[str, dict]:
    """Show the values an added event used (which may differ from what was typed)."""
    return {name: {"value": value} for name, value in used.items()}
