"""The shipped presets as the page opens them: each one's settings as the lab's URL hash.

`preset_hash(name)` is the hash text (without '#') that `urlstate.write_hash`
writes for the preset's scenario, so a link `index.html#<that>` opens the
preset; `preset_rows()` lists every preset with its source and hash, as
`prefix-lab presets --json` prints them. Standard library and `model` only:
this runs in the browser too.
"""

from typing import Any

from lab.page.urlstate import write_hash
from model import NAMED, scenario_of

__all__ = ["preset_hash", "preset_rows"]


def preset_hash(name: str) -> str:
    """The URL hash (without '#') that opens preset `name`; ScenarioError if there is none of that name."""
    return write_hash(scenario_of(name))


def preset_rows() -> list[dict[str, Any]]:
    """Every preset: name, source, description, settings and the hash that opens it on the page."""
    return [{**preset.to_dict(), "hash": preset_hash(name)} for name, preset in NAMED.items()]
