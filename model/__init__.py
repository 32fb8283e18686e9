"""prefix-lab's simulation: seeded chat traffic on a fleet of prefix-caching replicas.

`simulate(Scenario())` runs the lab's default scenario. Standard library only,
no I/O, no clocks, no global random state: it runs the same in CPython and
Pyodide, and the same scenario always gives the same result.
"""

from .config import KEYS, Event, Fleet, Router, Scenario, ScenarioError, Traffic
from .engine import simulate
from .metrics import ReplicaStats, RequestRecord, Result, Series
from .radix import RadixTree
from .routers import ROUTERS
from .traffic import Request, generate

__all__ = [
    "KEYS", "ROUTERS", "Event", "Fleet", "RadixTree", "ReplicaStats", "Request", "RequestRecord",
    "Result", "Router", "Scenario", "ScenarioError", "Series", "Traffic", "generate", "simulate",
]
