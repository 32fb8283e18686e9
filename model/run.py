"""One scenario run: the one place that chooses its replica engine, and `simulate`.

The mode is the scenario's (`Scenario.serving`, the key `fleet.decode`): lab mode
(`engines.lab.Run`, the seed's prefill-only model, frozen) or serving mode
(`engines.serving_run.ServingRun`, continuous batching with decode). Every caller
that needs a run in progress (the article's figures, the trees at a moment, the
hindsight explainer) asks `start` for it, so no other module picks an engine.
"""

from collections.abc import Callable, Iterable

from model.config import Scenario
from model.engines.lab import Run
from model.engines.serving_run import ServingRun
from model.metrics import RequestRecord, Result
from model.sources.traffic import Request

__all__ = ["AnyRun", "simulate", "start"]

AnyRun = Run | ServingRun  # a run in progress, of either engine: `step()` one event, `finish()` the rest


def start(scenario: Scenario, requests: Iterable[Request] | None = None, limit: int | None = None,
          force: dict[int, int] | None = None, keep_records: bool = True,
          on_record: Callable[[RequestRecord], None] | None = None) -> AnyRun:
    """`scenario`'s run on the engine its mode names, before its first event.

    `keep_records` and `on_record` are lab mode's (serving mode keeps its records: its measures read them all).
    """
    if scenario.serving:
        return ServingRun(scenario, requests, limit, force)
    return Run(scenario, requests, limit, force, keep_records, on_record)


def simulate(scenario: Scenario, requests: Iterable[Request] | None = None, limit: int | None = None,
             force: dict[int, int] | None = None, keep_records: bool = True,
             on_record: Callable[[RequestRecord], None] | None = None) -> Result:
    """Simulate `scenario` from its seed; same scenario, same result, to the bit.

    `requests` come from a request source, in arrival order; by default the
    scenario's own synthetic chat traffic (`traffic.generate`; in serving mode
    `sessions.ChatSessions`, whose sessions wait for their answers), which
    stops with `TooManyRequests` past `limit` requests. Any iterable will do
    (a trace read as a stream): a run takes the next request only when the
    one before it arrives. `force` overrides the router's choice for some
    requests (request id -> replica), for counterfactuals.

    Each request's record goes to `on_record`, in arrival order. With
    `keep_records=False` a lab-mode run measures each request as it is served
    and keeps no record (`Result.records` is empty), so its memory does not
    grow with the run's length; every figure is the same. Serving mode keeps
    its records either way and hands them to `on_record` once it is done.
    """
    result = start(scenario, requests, limit, force, keep_records, on_record).finish()
    if scenario.serving and on_record is not None:
        for rec in result.records:
            on_record(rec)
    return result
