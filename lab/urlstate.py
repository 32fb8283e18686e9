"""The page's state in the URL hash: `#fleet.replicas=8&router.kind=cache_aware`.

Keys are the model's dotted scenario keys, plus page keys (`mission`,
`unlock`). Only values that differ from the defaults are written, in a fixed
order, so equal states give equal URLs. Reading is forgiving: every pair is
applied on its own, and one that is unknown or invalid is dropped with a
notice naming it and saying what was used instead; the page never breaks.

Values are percent-encoded, except for the characters event lists use
(`@ + , :` are written as they are). `+` stays a plus: the hash is read with
`unquote`, never as a form, so it never turns into a space.
"""

from dataclasses import dataclass
from urllib.parse import quote, unquote

from model import KEYS, Scenario, ScenarioError, format_text, parse_events

__all__ = ["PAGE_KEYS", "HashState", "read_hash", "write_hash"]

PAGE_KEYS = ("mission", "unlock")  # state of the page itself, not of the scenario
_SAFE = "@,:+"  # left as they are; everything else is percent-encoded


@dataclass(frozen=True, slots=True)
class HashState:
    scenario: Scenario
    page: dict  # page keys present in the hash, as text
    notices: tuple[str, ...]  # what was dropped and why, for people to read


def read_hash(text: str, base: Scenario | None = None) -> HashState:
    """Parse a URL hash (with or without '#'); bad pairs fall back field by field."""
    scenario = base or Scenario()
    page: dict[str, str] = {}
    notices: list[str] = []
    pairs = []
    for part in text.lstrip("#").split("&"):
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = unquote(key).strip(), unquote(value).strip()
        if not eq:
            notices.append(f"Ignored '{_clip(key)}': settings look like key=value.")
        elif key in PAGE_KEYS:
            page[key] = value
        elif key not in KEYS:
            notices.append(f"Ignored unknown setting '{_clip(key)}'.")
        else:
            pairs.append((key, value))
    # Events last: whether one fits depends on duration_s.
    pairs.sort(key=lambda kv: kv[0] == "events")
    for key, value in pairs:
        if key == "events":
            scenario = _with_events(scenario, value, notices)
            continue
        try:
            scenario = scenario.with_text({key: value})
        except ScenarioError as exc:
            default = format_text(key, scenario.get(key))
            notices.append(f"Ignored {key}={_clip(value)}: {_reason(exc)} Using {default}.")
    return HashState(scenario, page, tuple(notices))


def _with_events(scenario: Scenario, text: str, notices: list[str]) -> Scenario:
    """Add the events of `text` one by one, dropping those that do not parse or fit."""
    kept: list = []  # Event values: with_values takes them as they are
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            candidate = scenario.with_values({"events": [*kept, *parse_events(part)]})
        except ScenarioError as exc:
            notices.append(f"Ignored event '{_clip(part)}': {_reason(exc)}")
            continue
        kept = list(candidate.events)
    return scenario.with_values({"events": kept})


def write_hash(scenario: Scenario, page: dict | None = None) -> str:
    """The hash (without '#') for a state: non-default scenario keys, then page keys."""
    defaults = Scenario().to_text()
    parts = [f"{key}={quote(value, safe=_SAFE)}" for key, value in scenario.to_text().items()
             if value != defaults[key]]
    parts += [f"{key}={quote(str(value), safe=_SAFE)}" for key, value in (page or {}).items()
              if key in PAGE_KEYS and value not in (None, "")]
    return "&".join(parts)


def _reason(exc: ScenarioError) -> str:
    """The part of a scenario error after its key, as a sentence."""
    text = str(exc)
    reason = text.split(": ", 1)[1] if ": " in text else text
    return reason[0].upper() + reason[1:].rstrip(".") + "."


def _clip(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."
