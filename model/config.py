"""The scenario: every knob of one simulated run, as frozen dataclasses.

A scenario is plain data. It comes in as nested JSON (`Scenario.from_dict`) or
as dotted keys with text values (`Scenario.with_text`, used by the CLI's
`--set` and the page's URL hash), and goes out the same two ways (`to_dict`,
`to_text`). Every field is checked on the way in; a bad value raises
`ScenarioError` naming the dotted key, the value and what is allowed.

The dotted keys are a contract shared with the page URL and the CLI:
`seed`, `duration_s`, `dynamic_text`, `traffic.*`, `fleet.*`, `router.*`,
`events`. Unknown keys are errors, never ignored.

Events have a compact text form for URLs and `--set`:
`timestamp@120`, `surge@60+90` (start 60 s, lasting 90 s), `burst@30+20x3`
(start 30 s, lasting 20 s, arrivals times 3), joined by commas.
"""

import dataclasses
import difflib
import math
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DYNAMIC_TEXT",
    "describe",
    "EVENT_KINDS",
    "KEYS",
    "Event",
    "Fleet",
    "ROUTER_KINDS",
    "Router",
    "Scenario",
    "ScenarioError",
    "Traffic",
    "TOKENS_PER_GB",
]

TOKENS_PER_GB = 8192
DYNAMIC_TEXT = ("none", "top", "bottom")
ROUTER_KINDS = ("round_robin", "random", "least_loaded", "consistent_hash", "cache_aware")
EVENT_KINDS = ("timestamp", "surge", "burst")
MAX_EVENTS = 24


class ScenarioError(ValueError):
    """A scenario value that cannot be used; the message names key, value and fix."""


def _spec(default: Any, lo: float | None = None, hi: float | None = None,
          choices: tuple[str, ...] | None = None, doc: str = "") -> Any:
    return field(default=default, metadata={"lo": lo, "hi": hi, "choices": choices, "doc": doc})


@dataclass(frozen=True, slots=True)
class Traffic:
    """Synthetic chat sessions: who arrives, with which prompt, saying how much."""

    session_rate: float = _spec(2.0, 0.01, 50.0, doc="new chat sessions per second (Poisson)")
    turns_mean: float = _spec(4.0, 1.0, 20.0, doc="mean turns per session (geometric, at least 1)")
    gap_min_s: float = _spec(2.0, 0.0, 600.0, doc="shortest pause between a session's turns")
    gap_max_s: float = _spec(10.0, 0.0, 600.0, doc="longest pause between a session's turns")
    system_prompts: int = _spec(6, 1, 1000, doc="distinct system prompts in normal traffic")
    surge_system_prompts: int = _spec(40, 1, 1000, doc="distinct system prompts during a tenant surge")
    zipf_s: float = _spec(1.0, 0.0, 4.0, doc="Zipf exponent of system prompt popularity (0 = uniform)")
    system_tokens: int = _spec(1500, 1, 100_000, doc="tokens in a system prompt")
    dynamic_at: int = _spec(200, 0, 100_000, doc="tokens into the system prompt where dynamic text goes")
    dynamic_tokens: int = _spec(20, 1, 10_000, doc="tokens of dynamic text (a timestamp)")
    user_min: int = _spec(40, 1, 100_000, doc="fewest tokens in a user turn")
    user_max: int = _spec(240, 1, 100_000, doc="most tokens in a user turn")
    answer_mean: int = _spec(220, 1, 100_000, doc="mean tokens in an answer")


@dataclass(frozen=True, slots=True)
class Fleet:
    """The replicas and what each one can hold and compute."""

    replicas: int = _spec(4, 1, 64, doc="number of replicas")
    cache: bool = _spec(True, doc="prefix cache on or off")
    memory_gb: float = _spec(4.0, 0.0, 1024.0, doc="prefix (KV) memory per replica in GB")
    prefill_tokens_per_s: float = _spec(10_000.0, 1.0, 10_000_000.0, doc="prefill speed of one replica")
    overhead_ms: float = _spec(15.0, 0.0, 10_000.0, doc="fixed cost of every request")


@dataclass(frozen=True, slots=True)
class Router:
    """Which router picks the replica, and when cache-aware routing gives up on the cache."""

    kind: str = _spec("least_loaded", choices=ROUTER_KINDS, doc="routing policy")
    # None means never spill: cache-aware routing always takes the longest match.
    spill_threshold_s: float | None = _spec(1.0, 0.0, 3600.0, doc="backlog gap (s) past which cache_aware spills; off = never")


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happens during the run, from `at_s` on."""

    kind: str  # "timestamp" | "surge" | "burst"
    at_s: float
    duration_s: float = 0.0  # surge and burst only; a timestamp stays to the end
    factor: float = 1.0  # burst only: arrival rate multiplier

    def ends_s(self) -> float:
        return math.inf if self.kind == "timestamp" else self.at_s + self.duration_s

    def to_text(self) -> str:
        at = _num_text(self.at_s)
        if self.kind == "timestamp":
            return f"timestamp@{at}"
        text = f"{self.kind}@{at}+{_num_text(self.duration_s)}"
        return text + f"x{_num_text(self.factor)}" if self.kind == "burst" else text


@dataclass(frozen=True, slots=True)
class Scenario:
    """One simulated run: traffic, fleet, router, events, all from one seed."""

    seed: int = _spec(1, 0, 2**63 - 1, doc="seed of every random stream")
    duration_s: float = _spec(180.0, 1.0, 7200.0, doc="seconds during which requests arrive")
    dynamic_text: str = _spec("none", choices=DYNAMIC_TEXT, doc="where per-request text sits in the prompt")
    traffic: Traffic = field(default_factory=Traffic)
    fleet: Fleet = field(default_factory=Fleet)
    router: Router = field(default_factory=Router)
    events: tuple[Event, ...] = ()

    def __post_init__(self) -> None:
        _check(self)

    # -- in -------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> "Scenario":
        """Build from nested JSON data; missing fields take their defaults."""
        return _build(cls, data, "")

    def with_values(self, values: dict[str, Any]) -> "Scenario":
        """A copy with dotted keys set to typed values (as JSON would give them)."""
        data = self.to_dict()
        for key, value in values.items():
            _set_dotted(data, key, value)
        return Scenario.from_dict(data)

    def with_text(self, values: dict[str, str]) -> "Scenario":
        """A copy with dotted keys set from text (`--set` and URL values)."""
        return self.with_values({key: parse_text(key, text) for key, text in values.items()})

    # -- out ------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Nested JSON-ready data; `Scenario.from_dict(s.to_dict()) == s`."""
        return _as_dict(self)

    def to_text(self) -> dict[str, str]:
        """Every dotted key with its text value, in a fixed order."""
        return {key: format_text(key, self.get(key)) for key in KEYS}

    def get(self, key: str) -> Any:
        """The value at a dotted key."""
        obj: Any = self
        for part in key.split("."):
            obj = getattr(obj, part)
        return obj

    def events_of(self, kind: str) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.kind == kind)


# -- keys and text --------------------------------------------------------

_SECTIONS = {"traffic": Traffic, "fleet": Fleet, "router": Router}


def _keys() -> tuple[str, ...]:
    keys = []
    for f in dataclasses.fields(Scenario):
        if f.name in _SECTIONS:
            keys += [f"{f.name}.{g.name}" for g in dataclasses.fields(_SECTIONS[f.name])]
        else:
            keys.append(f.name)
    return tuple(keys)


KEYS: tuple[str, ...] = _keys()


def describe() -> list[dict[str, Any]]:
    """Every dotted key with its default, what it allows and what it means."""
    out = []
    defaults = Scenario().to_text()
    for key in KEYS:
        if key == "events":
            out.append({"key": key, "default": "", "allowed": "timestamp@T, surge@T+D, burst@T+DxF, comma-separated",
                        "meaning": "what happens during the run"})
            continue
        meta = field_of(key).metadata
        if meta["choices"]:
            allowed = " | ".join(meta["choices"])
        elif meta["lo"] is None:
            allowed = "true | false"
        else:
            allowed = f"{_num_text(meta['lo'])} to {_num_text(meta['hi'])}"
            allowed += " or off" if key == "router.spill_threshold_s" else ""
        out.append({"key": key, "default": defaults[key], "allowed": allowed, "meaning": meta["doc"]})
    return out


def field_of(key: str) -> dataclasses.Field:
    """The dataclass field behind a dotted key, or a ScenarioError naming the known keys."""
    if key not in KEYS:
        near = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.6)
        hint = f"did you mean {near[0]}?" if near else "known keys: " + ", ".join(KEYS)
        raise ScenarioError(f"{key}: unknown key; {hint}")
    section, _, name = key.rpartition(".")
    cls = _SECTIONS[section] if section else Scenario
    return next(f for f in dataclasses.fields(cls) if f.name == name)


def parse_text(key: str, text: str) -> Any:
    """Turn a text value into the JSON-like value the key takes."""
    f = field_of(key)
    text = text.strip()
    if key == "events":
        return [_as_dict(e) for e in parse_events(text)]
    if f.type is bool:
        lowered = text.lower()
        if lowered in ("true", "on", "yes", "1"):
            return True
        if lowered in ("false", "off", "no", "0"):
            return False
        raise ScenarioError(f"{key}: {text!r} is not a switch; use true or false")
    if f.type in (int, float, float | None):
        if f.type == float | None and text.lower() in ("off", "none", "null", "never"):
            return None
        try:
            number = float(text)
        except ValueError:
            extra = " or off" if f.type == float | None else ""
            raise ScenarioError(f"{key}: {text!r} is not a number; use a number{extra}") from None
        return int(number) if f.type is int and number.is_integer() else number
    return text


def format_text(key: str, value: Any) -> str:
    """The text form of a value at a dotted key; `parse_text` reads it back."""
    if key == "events":
        return ",".join(e.to_text() for e in value)
    if value is None:
        return "off"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _num_text(value)
    return str(value)


def _num_text(x: float) -> str:
    if isinstance(x, int):
        return str(x)
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


_EVENT_TEXT = re.compile(
    r"^(?P<kind>[a-z]+)@(?P<at>[0-9.]+)(?:\+(?P<dur>[0-9.]+))?(?:x(?P<factor>[0-9.]+))?$")


def parse_events(text: str) -> tuple[Event, ...]:
    """Read `timestamp@120,surge@60+90,burst@30+20x3` (empty text: no events)."""
    events = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = _EVENT_TEXT.match(part)
        if not m:
            raise ScenarioError(
                f"events: {part!r} is not an event; write timestamp@SECONDS, "
                "surge@START+DURATION or burst@START+DURATIONxFACTOR")
        try:
            at = float(m["at"])
            dur = float(m["dur"]) if m["dur"] else 0.0
            factor = float(m["factor"]) if m["factor"] else 1.0
        except ValueError:
            raise ScenarioError(f"events: {part!r} has a malformed number") from None
        kind = m["kind"]
        if kind not in EVENT_KINDS:
            raise ScenarioError(f"events: {part!r} is not an event; its kind must be one of {', '.join(EVENT_KINDS)}")
        if kind == "timestamp" and (m["dur"] or m["factor"]):
            raise ScenarioError(f"events: {part!r}: a timestamp takes only a start, as timestamp@120")
        if kind == "surge" and m["factor"]:
            raise ScenarioError(f"events: {part!r}: a surge takes a start and a duration, as surge@60+90")
        events.append(Event(kind, at, dur, factor))
    return tuple(events)


# -- building and checking ------------------------------------------------

def _as_dict(obj: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            value = _as_dict(value)
        elif isinstance(value, tuple):
            value = [_as_dict(v) for v in value]
        out[f.name] = value
    return out


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    field_of(key)  # unknown keys fail here, with a hint
    *path, name = key.split(".")
    target = data
    for part in path:
        target = target.setdefault(part, {})
    target[name] = value


def _build(cls: type, data: Any, prefix: str) -> Any:
    where = prefix.rstrip(".") or "scenario"
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected an object of fields, got {_show(data)}")
    names = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ScenarioError(f"{prefix}{unknown[0]}: unknown key; known here: {', '.join(names)}")
    kwargs = {}
    for name, value in data.items():
        f = names[name]
        key = prefix + name
        if cls is Scenario and name in _SECTIONS:
            kwargs[name] = _build(_SECTIONS[name], value, key + ".")
        elif cls is Scenario and name == "events":
            kwargs[name] = _build_events(value)
        else:
            kwargs[name] = _coerce(key, f, value)
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field missing, as an event without `at_s`
        raise ScenarioError(f"{where}: {exc}") from None


def _build_events(value: Any) -> tuple[Event, ...]:
    if isinstance(value, str):
        return parse_events(value)
    if not isinstance(value, (list, tuple)):
        raise ScenarioError(f"events: expected a list of events, got {_show(value)}")
    events = []
    for i, item in enumerate(value):
        if isinstance(item, Event):
            events.append(item)
            continue
        if not isinstance(item, dict):
            raise ScenarioError(f"events[{i}]: expected an object like {{\"kind\": \"burst\", \"at_s\": 30}}, got {_show(item)}")
        unknown = sorted(set(item) - {"kind", "at_s", "duration_s", "factor"})
        if unknown:
            raise ScenarioError(f"events[{i}].{unknown[0]}: unknown key; known: kind, at_s, duration_s, factor")
        for need in ("kind", "at_s"):
            if need not in item:
                raise ScenarioError(f"events[{i}].{need}: missing; every event needs kind and at_s")
        kind = item["kind"]
        if kind not in EVENT_KINDS:
            raise ScenarioError(f"events[{i}].kind: {_show(kind)} is not allowed; use one of {', '.join(EVENT_KINDS)}")
        nums = {}
        for name in ("at_s", "duration_s", "factor"):
            if name in item:
                v = item[name]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise ScenarioError(f"events[{i}].{name}: {_show(v)} is not a number")
                nums[name] = float(v)
        events.append(Event(kind, **nums))
    return tuple(events)


def _coerce(key: str, f: dataclasses.Field, value: Any) -> Any:
    meta = f.metadata
    if f.type is bool:
        if not isinstance(value, bool):
            raise ScenarioError(f"{key}: {_show(value)} is not allowed; use true or false")
        return value
    if f.type is str:
        if value not in meta["choices"]:
            raise ScenarioError(f"{key}: {_show(value)} is not allowed; use one of {', '.join(meta['choices'])}")
        return value
    if f.type == float | None and value is None:
        return None
    whole = f.type is int
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        kind = "a whole number" if whole else "a number"
        raise ScenarioError(f"{key}: {_show(value)} is not allowed; use {kind} from {_num_text(meta['lo'])} to {_num_text(meta['hi'])}")
    if whole and not float(value).is_integer():
        raise ScenarioError(f"{key}: {_show(value)} is not a whole number; use a whole number from {meta['lo']} to {meta['hi']}")
    if not meta["lo"] <= value <= meta["hi"]:
        kind = "a whole number" if whole else "a number"
        off = " or off" if f.type == float | None else ""
        raise ScenarioError(f"{key}: {_show(value)} is out of range; use {kind} from {_num_text(meta['lo'])} to {_num_text(meta['hi'])}{off}")
    return int(value) if whole else float(value)


def _check(s: Scenario) -> None:
    """Rules that tie fields together; single fields were checked on the way in."""
    t = s.traffic
    if t.gap_min_s > t.gap_max_s:
        raise ScenarioError(f"traffic.gap_min_s: {_num_text(t.gap_min_s)} is above traffic.gap_max_s ({_num_text(t.gap_max_s)}); make the minimum the smaller")
    if t.user_min > t.user_max:
        raise ScenarioError(f"traffic.user_min: {t.user_min} is above traffic.user_max ({t.user_max}); make the minimum the smaller")
    if t.dynamic_at > t.system_tokens:
        raise ScenarioError(f"traffic.dynamic_at: {t.dynamic_at} is past the end of the system prompt ({t.system_tokens} tokens)")
    if len(s.events) > MAX_EVENTS:
        raise ScenarioError(f"events: {len(s.events)} events; use at most {MAX_EVENTS}")
    for i, e in enumerate(s.events):
        where = f"events[{i}] ({e.to_text() if e.kind in EVENT_KINDS else e.kind})"
        if e.kind not in EVENT_KINDS:
            raise ScenarioError(f"{where}: kind must be one of {', '.join(EVENT_KINDS)}")
        if not 0.0 <= e.at_s < s.duration_s:
            raise ScenarioError(f"{where}: starts at {_num_text(e.at_s)} s; use a start from 0 to below duration_s ({_num_text(s.duration_s)})")
        if e.kind == "timestamp" and (e.duration_s or e.factor != 1.0):
            raise ScenarioError(f"{where}: a timestamp takes no duration or factor")
        if e.kind != "timestamp" and not 0.0 < e.duration_s <= 7200.0:
            raise ScenarioError(f"{where}: duration {_num_text(e.duration_s)} s; use a duration above 0 and at most 7200 s")
        if e.kind == "surge" and e.factor != 1.0:
            raise ScenarioError(f"{where}: a surge takes no factor")
        if e.kind == "burst" and not 1.0 <= e.factor <= 20.0:
            raise ScenarioError(f"{where}: factor {_num_text(e.factor)}; use a factor from 1 to 20")
    ordered = tuple(sorted(s.events, key=lambda e: (e.at_s, e.kind, e.duration_s, e.factor)))
    if ordered != s.events:  # events are a set in time: keep one canonical order
        object.__setattr__(s, "events", ordered)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return _num_text(value) if math.isfinite(value) else repr(value)
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 40 else text[:37] + "..."
