"""The page's state in the URL hash: `#fleet.replicas=8&router.kind=cache_aware`.

Keys are the model's dotted scenario keys, plus page keys (`mission`,
`unlock`) and the schema version `v`. Only values that differ from the
defaults are written, in a fixed order, so equal states give equal URLs.
Reading is forgiving: every pair is applied on its own, and one that is
unknown or invalid is dropped with a notice naming it and saying what was
used instead; the page never breaks.

Links last. A hash without `v` is schema 1: every link written before
versions existed. `v` is written only when the schema is past 1, by the same
rule as every other key (a value equal to its default is left out), so
today's links and today's written hashes are the same text. When a key or a
value is renamed, the schema goes up and `RENAMES` says what the old name
was: a link of an older schema is read with its old names mapped to the new
ones, each with a notice. A link of a newer schema is read as well as this
version can, with a notice.

Hostile links stay cheap. A hash longer than `MAX_HASH` characters is not
read at all; a key given more than once counts once, by its last value; at
most `MAX_EVENT_PARTS` events are tried; and at most `MAX_NOTICES` notices
are kept, the last saying how many more were dropped.

Values are percent-encoded, except for the characters event lists use
(`@ + , :` are written as they are). `+` stays a plus: the hash is read with
`unquote`, never as a form, so it never turns into a space.
"""

import math
from dataclasses import dataclass
from urllib.parse import quote, unquote

from model import KEYS, MAX_EVENTS, Scenario, ScenarioError, default_text, format_text, parse_events

__all__ = ["MAX_HASH", "MAX_NOTICES", "PAGE_KEYS", "RENAMES", "SCHEMA", "HashState", "Rename", "capped", "read_hash",
           "write_hash"]

PAGE_KEYS = ("mission", "unlock", "explain", "trace", "base", "axes", "tree_replica", "tree_at", "predict", "guess",
             "guess_figure", "guess_base", "hint")  # state of the page itself, not of the scenario
VERSION_KEY = "v"
UNVERSIONED = 1  # the schema of a hash without `v`
SCHEMA = 1  # the schema this code writes; raise it with every entry added to RENAMES
_SAFE = "@,:+"  # left as they are; everything else is percent-encoded
MAX_HASH = 8192  # characters: every real setup is a few hundred
MAX_EVENT_PARTS = 2 * MAX_EVENTS  # events tried from one link, valid or not
MAX_NOTICES = 12


@dataclass(frozen=True, slots=True)
class Rename:
    """Since schema `version`, key `old` is called `new`, and its values `values` (old, new) are spelled anew."""

    version: int
    old: str
    new: str
    values: tuple[tuple[str, str], ...] = ()


RENAMES: tuple[Rename, ...] = ()  # oldest first; none yet


@dataclass(frozen=True, slots=True)
class HashState:
    scenario: Scenario
    page: dict  # page keys present in the hash, as text
    notices: tuple[str, ...]  # what was dropped or renamed and why, for people to read
    version: int = SCHEMA  # the schema the hash was written in


def read_hash(text: str, base: Scenario | None = None, *, schema: int = SCHEMA,
              renames: tuple[Rename, ...] = RENAMES) -> HashState:
    """Parse a URL hash (with or without '#'); bad pairs fall back field by field."""
    scenario = base or Scenario()
    page: dict[str, str] = {}
    notices: list[str] = []
    text = text.lstrip("#")
    if len(text) > MAX_HASH:
        return HashState(scenario, page, (f"This link's settings are {len(text):,} characters long, more than a lab "
                                          f"setup needs ({MAX_HASH:,}); showing the default setup instead.",), schema)
    last: dict[str, str] = {}  # a key given twice counts once, by its last value
    for part in text.split("&"):
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = unquote(key).strip(), unquote(value).strip()
        if not eq:
            notices.append(f"Ignored '{_clip(key)}': settings look like key=value.")
        else:
            last.pop(key, None)
            last[key] = value
    version, raw = _version(list(last.items()), schema, notices)
    pairs = []
    for key, value in _renamed(raw, version, schema, renames, notices):
        if key in PAGE_KEYS:
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
            candidate = scenario.with_text({key: value})
        except ScenarioError as exc:
            default = format_text(key, scenario.get(key))
            notices.append(f"Ignored {key}={_clip(value)}: {_reason(exc)} Using {default}.")
            continue
        if candidate.get(key) == math.inf:  # an unlimited cache: the command line's, no slider shows it
            notices.append(f"Ignored {key}={_clip(value)}: the page has no unlimited setting (the command line "
                           f"has). Using {format_text(key, scenario.get(key))}.")
            continue
        scenario = candidate
    return HashState(scenario, page, capped(notices), version)


def capped(notices: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """At most `MAX_NOTICES`, the last of them saying how many more there were."""
    if len(notices) <= MAX_NOTICES:
        return tuple(notices)
    kept = MAX_NOTICES - 1
    return (*notices[:kept], f"…and {len(notices) - kept:,} more notices like these, not shown.")


def _version(pairs: list[tuple[str, str]], schema: int, notices: list[str]) -> tuple[int, list[tuple[str, str]]]:
    """The schema a hash says it was written in (absent: 1), and its other pairs."""
    given = [value for key, value in pairs if key == VERSION_KEY]
    rest = [(key, value) for key, value in pairs if key != VERSION_KEY]
    if not given:
        return UNVERSIONED, rest
    text = given[-1]
    if not text.isdigit() or int(text) < 1:
        notices.append(f"Ignored {VERSION_KEY}={_clip(text)}: not a version number; read as a link of version "
                       f"{UNVERSIONED}.")
        return UNVERSIONED, rest
    version = int(text)
    if version > schema:
        notices.append(f"This link comes from a newer version of the lab (v{version}; this is v{schema}): "
                       "settings this version does not know are left out.")
    return version, rest


def _renamed(pairs: list[tuple[str, str]], version: int, schema: int, renames: tuple[Rename, ...],
             notices: list[str]) -> list[tuple[str, str]]:
    """`pairs` of a hash written in `version` with every later rename up to `schema` applied, each said once."""
    for r in sorted(renames, key=lambda r: r.version):
        if not version < r.version <= schema:
            continue
        values = dict(r.values)
        out = []
        for key, value in pairs:
            if key == r.old and (key != r.new or value in values):
                new_value = values.get(value, value)
                was, now = f"{key}={_clip(value)}", f"{r.new}={_clip(new_value)}"
                notices.append(f"This link is from an older version of the lab: read {was} as {now}.")
                key, value = r.new, new_value
            out.append((key, value))
        pairs = out
    return pairs


def _with_events(scenario: Scenario, text: str, notices: list[str]) -> Scenario:
    """Add the events of `text` one by one, dropping those that do not parse or fit."""
    kept: list = []  # Event values: with_values takes them as they are
    parts = [p for p in (p.strip() for p in text.split(",")) if p]
    if len(parts) > MAX_EVENT_PARTS:
        notices.append(f"This link lists {len(parts):,} events; the lab reads the first {MAX_EVENT_PARTS} "
                       f"(and keeps at most {MAX_EVENTS}).")
    for part in parts[:MAX_EVENT_PARTS]:
        try:
            candidate = scenario.with_values({"events": [*kept, *parse_events(part)]})
        except ScenarioError as exc:
            notices.append(f"Ignored event '{_clip(part)}': {_reason(exc)}")
            continue
        kept = list(candidate.events)
    return scenario.with_values({"events": kept})


def write_hash(scenario: Scenario, page: dict | None = None, *, schema: int = SCHEMA) -> str:
    """The hash (without '#') for a state: the schema if past 1, non-default scenario keys, then page keys."""
    defaults = default_text()
    parts = [f"{VERSION_KEY}={schema}"] if schema != UNVERSIONED else []
    parts += [f"{key}={quote(value, safe=_SAFE)}" for key, value in scenario.to_text().items()
              if value != defaults[key]]
    page = page or {}
    parts += [f"{key}={quote(str(page[key]), safe=_SAFE)}" for key in PAGE_KEYS if page.get(key) not in (None, "")]
    if parts == [f"{VERSION_KEY}={schema}"]:
        return ""  # the default state: an empty hash, whatever the schema
    return "&".join(parts)


def _reason(exc: ScenarioError) -> str:
    """The part of a scenario error after its key, as a sentence."""
    text = str(exc)
    reason = text.split(": ", 1)[1] if ": " in text else text
    return reason[0].upper() + reason[1:].rstrip(".") + "."


def _clip(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."
