"""Named scenarios shipped with the project: a published setup, ready to run by its name.

A `NamedScenario` is data: its name, where its figures come from (`source`),
what it sets up in a sentence, and its settings as dotted keys with text
values, the form `--set` and the page's URL take. `scenario_of(name)` builds
it on top of the default scenario; anything a caller sets afterwards wins.
Every preset's settings are checked by the tests, so none can rot.

`kv-locality-note`: the stress test of the KV-locality note
(`seeds/kv-locality-note.txt`): CodeLlama 13B on eight A100s, 30 users at
once, each conversation starting with a 4,000-token system prompt that is
90% of its first prompt. The note gives no think time (a stress test: 0),
no answer length (the lab's chat default, 220 tokens on average) and no
window (300 s here); the KV memory is what an 80 GB card leaves
(`hardware.kv_room_gb`), and the router the seed's cache-aware one.
"""

import math
from dataclasses import dataclass

from model.config import Scenario, ScenarioError
from model.gpus.hardware import kv_room_gb

__all__ = ["NAMED", "NamedScenario", "scenario_of"]


@dataclass(frozen=True, slots=True)
class NamedScenario:
    name: str
    source: str  # where the setup and its figures come from
    description: str  # the setup, in a sentence
    settings: tuple[tuple[str, str], ...]  # dotted key, text value; applied to the default scenario in order

    def scenario(self) -> Scenario:
        """The setup as a scenario: the defaults with `settings` applied."""
        return Scenario().with_text(dict(self.settings))

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "source": self.source, "description": self.description,
                "settings": dict(self.settings)}


def _floor_gb(gb: float) -> str:
    """A memory size rounded down to a hundredth of a GB, as text: never more than the card leaves."""
    return f"{math.floor(gb * 100) / 100:g}"


LOCALITY_HARDWARE = "codellama13b_a100"

NAMED: dict[str, NamedScenario] = {s.name: s for s in (
    NamedScenario(
        "kv-locality-note",
        "KV-locality note (seeds/kv-locality-note.txt): its stress test on CodeLlama 13B and 8 A100s",
        "30 users at once on 8 A100s serving CodeLlama 13B, each conversation opening with a 4,000-token "
        "system prompt that is 90% of its first prompt; every request waits for the answer before it",
        (("traffic.kind", "closed"), ("traffic.users", "30"), ("traffic.prefix_tokens", "4000"),
         ("traffic.sharing_ratio", "0.9"), ("traffic.think_s", "0"), ("fleet.decode", "true"),
         ("fleet.replicas", "8"), ("hardware.preset", LOCALITY_HARDWARE),
         ("fleet.memory_gb", _floor_gb(kv_room_gb(LOCALITY_HARDWARE))), ("router.kind", "cache_aware"),
         ("duration_s", "300")),
    ),
)}


def scenario_of(name: str) -> Scenario:
    """The named scenario, or a ScenarioError naming the presets there are."""
    preset = NAMED.get(name)
    if preset is None:
        raise ScenarioError(f"preset {name!r}: no such preset; known: {', '.join(NAMED)}")
    return preset.scenario()
