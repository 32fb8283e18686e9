"""Every mission's hints, taken as a player takes them, checked against the mission's own sweep (issue 29, 3).

A player opens the hints one at a time, in order, from the mission's start, and does what each says on top of
what the ones before it said. `READINGS` spells out what each hint's words ask for: the settings it leads to
(`None` for a hint that only points at a chart) and the figures it promises to improve. Each step must improve
them without losing a star, and the last setup must earn at least one star. Every setup is looked up in the
sweep the site ships (`lab/data/mission-sweeps.json`), so the check is the one a player would see, and a
setup the sweep never ran fails instead of passing unseen.
"""

import json

import pytest
from helpers import ROOT

from missions import MISSIONS
from missions.scoring import BETTER

SWEEPS = {d["id"]: d for d in json.loads((ROOT / "lab" / "data" / "mission-sweeps.json").read_text())["missions"]}

# mission -> one reading per hint: (words the hint holds, the settings it leads to or None, figures it improves).
# A hint with two moves ("first this, then that") has a list of (settings, figures) steps.
LOOK = None
READINGS = {
    "cache-on": [
        ("Prefix cache checkbox", {"fleet.cache": "true"}, ("ttft_p50_ms",)),
        ("take away Replicas", {"fleet.replicas": "2"}, ("replicas",)),
    ],
    "timestamp": [
        ("line under Dynamic text", LOOK, ()),
        ("move the Dynamic text", {"dynamic_text": "bottom"}, ("hit_rate",)),
        ("compare the choices of Dynamic text", {"dynamic_text": "none"}, ("ttft_p99_ms",)),
    ],
    "round-robin": [
        ("look at what a replica holds", {"router.kind": "cache_aware"}, ("hit_rate",)),
        ("how often a turn finds", LOOK, ()),
        ("take away Replicas one at a time", [({"fleet.replicas": str(n)}, ("replicas",)) for n in (6, 5, 4, 3)], ()),
    ],
    "hot-tenant": [
        ("one replica carrying the hot tenant", LOOK, ()),
        ("how far behind the warm replica may fall", {"router.spill_threshold_s": "0.1"}, ("ttft_p99_ms",)),
        ("Spilling too eagerly gives away hit rate", {"router.spill_threshold_s": "0.3"}, ("hit_rate",)),
    ],
    "surge-memory": [
        ("shows the cache full during the surge", LOOK, ()),
        ("both make room", {"fleet.memory_gb": "4"}, ("hit_rate",)),
        ("least Prefix memory", {"fleet.memory_gb": "3"}, ("fleet_memory_gb",)),
    ],
    "burst": [
        ("add Replicas", {"fleet.replicas": "3"}, ("ttft_p99_ms",)),
        ("what the Router weighs", {"router.kind": "cache_aware"}, ("ttft_p99_ms",)),
        ("the Spill threshold lets the burst overflow", {"router.spill_threshold_s": "0.2"}, ("ttft_p99_ms",)),
    ],
    "consistent-hash": [
        ("one replica drowning", LOOK, ()),
        ("weighs how busy a replica is", {"router.kind": "cache_aware"}, ("ttft_p99_ms",)),
        ("The Spill threshold sets", {"router.spill_threshold_s": "0.2"}, ("ttft_p99_ms",)),
    ],
    "monday": [
        ("Begin with the prompt", {"dynamic_text": "none"}, ("hit_rate",)),
        ("Then the Router", {"router.kind": "cache_aware"}, ("hit_rate",)),
        ("only then take away Replicas", [({"fleet.memory_gb": "4"}, ("hit_rate",)),
                                          ({"fleet.replicas": "4"}, ("replicas",))], ()),
    ],
    "bounded-hash": [
        ("carries far more than its share", LOOK, ()),
        ("The Load bound caps", {"router.load_factor": "1.5"}, ("ttft_p99_ms",)),
        ("A tighter Load bound", {"router.load_factor": "1.05"}, ("ttft_p99_ms",)),
    ],
    "stale-router": [
        ("wrong guesses are prefixes", LOOK, ()),
        ("Router forgets after sets", {"router.view_ttl_s": "1"}, ("router_overestimate",)),
        ("Forgetting too soon", {"router.view_ttl_s": "3"}, ("hit_rate",)),
    ],
    "warm-or-idle": [
        ("add Replicas", {"fleet.replicas": "5"}, ("ttft_p99_ms",)),
        ("Fetch a prefix a peer holds", {"fleet.fetch": "rdma"}, ("ttft_p99_ms",)),
        ("what each choice of Router weighs", {"router.kind": "cost"}, ("ttft_p99_ms",)),
    ],
    "fan-out": [
        ("jumps each time a fan-out", LOOK, ()),
        ("Send the first sub-call alone", {"traffic.agent_warm_first": "true"}, ("ttft_p99_ms",)),
        ("take away Replicas", {"fleet.replicas": "3"}, ("replicas",)),
    ],
    "real-traffic": [
        ("rarely lands where its history is", LOOK, ()),
        ("already holds the conversation", {"router.kind": "cache_aware"}, ("ttft_p99_ms",)),
        ("take away Replicas step by step", [({"fleet.replicas": str(n)}, ("replicas",)) for n in (6, 4)], ()),
    ],
    "split-decode": [
        ("pauses between tokens", LOOK, ()),
        ("GPUs that only decode", {"fleet.prefill_replicas": "2", "fleet.decode_replicas": "3"}, ("tbt_slo_met",)),
        ("Count GPUs, not Replicas", {"fleet.decode_replicas": "2", "fleet.prefill_replicas": "1"}, ("gpus",)),
    ],
    "pile-up": [
        ("one replica doing all the work", LOOK, ()),
        ("Lower the Imbalance spread", {"router.balance_abs_threshold": "4"}, ("ttft_p99_ms",)),
        ("as you lower the Imbalance spread", {"router.balance_abs_threshold": "1"}, ("hit_rate",)),
    ],
}


def row_of(mission_id, settings):
    """The sweep's row for the start with `settings` applied (its grid's keys all set), or a failure."""
    d = SWEEPS[mission_id]
    wanted = {**d["start"]["settings"], **settings}
    for row in d["setups"]:
        if row["settings"] == wanted:
            return row
    pytest.fail(f"{mission_id}: the sweep never ran {wanted}")


def steps(reading):
    _, settings, promised = reading
    if settings is LOOK:
        return []
    return settings if isinstance(settings, list) else [(settings, promised)]


def test_every_mission_has_a_reading_of_each_of_its_hints():
    assert set(READINGS) == {m.id for m in MISSIONS}
    for m in MISSIONS:
        readings = READINGS[m.id]
        assert len(readings) == len(m.hints), m.id
        for (words, _, _), hint in zip(readings, m.hints, strict=True):
            assert words in hint, f"{m.id}: {hint!r} no longer says {words!r}; read it again"
        assert any(steps(r) for r in readings), f"{m.id}: no hint says what to change"


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_each_hint_taken_in_turn_from_the_start_improves_what_it_promises_and_keeps_every_star(mission):
    settings: dict[str, str] = {}
    before = SWEEPS[mission.id]["start"]
    for reading in READINGS[mission.id]:
        words = reading[0]
        for change, promised in steps(reading):
            settings = {**settings, **change}
            assert set(change) <= set(mission.controls), f"{mission.id}: {words!r} changes a fixed key"
            after = row_of(mission.id, settings)
            for figure in promised:
                gain = BETTER[figure] * (after["figures"][figure] - before["figures"][figure])
                assert gain > 0, (f"{mission.id}: after {words!r} ({settings}) {figure} went "
                                  f"{before['figures'][figure]} -> {after['figures'][figure]}")
            assert after["stars"] >= before["stars"], (f"{mission.id}: {words!r} ({settings}) loses stars: "
                                                       f"{before['stars']} -> {after['stars']}")
            before = after
    assert before["stars"] >= 1, f"{mission.id}: every hint taken ({settings}) earns no star"
