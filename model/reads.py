"""Which keys a run reads: the scenario as a run sees it, from each key's own declaration (`reads`).

Two scenarios with equal `run_key`s give equal results, so the page remembers a
run by it; a key a run starts to read is declared so beside the key
(`model/config.py`, `READS`), never in a list of the page's.
"""

from model.config import KEYS, Scenario, reads_of
from model.studies.explainers import TIERS

__all__ = ["run_key"]


def run_key(scenario: Scenario) -> tuple[tuple[str, str], ...]:
    """Every key a run of `scenario` reads, with its text value, in a fixed order.

    Lab mode reads a link's speed only while its replicas fetch over that link (`fleet.fetch`), and no key
    only serving mode's replicas read; serving mode keeps every link speed, as one may price a hand-over.
    """
    serving, fetching = scenario.serving, TIERS[scenario.fleet.fetch][0] if scenario.fleet.fetch != "off" else None
    text = scenario.to_text()
    kept = []
    for key in KEYS:
        reads = reads_of(key)
        if reads == "none" or (not serving and (reads == "serving" or (reads == "link" and
                                                                        key != f"transfer.{fetching}"))):
            continue
        kept.append((key, text[key]))
    return tuple(kept)
