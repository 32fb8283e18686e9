"""What a run is in either mode: its profile and notes, its request source, the event loop, the router, samples.

Both engines' runs (`engines.lab.Run`, `engines.serving_run.ServingRun`) are a
`RunShell` plus what their replicas do: the shell sets up the scenario's
hardware profile, the source that waits for answers (agent runs, closed
users) or the list or stream of requests given, one event loop and the
dispatcher, and it sends given requests at their arrival times as the
loop's feed (which holds only the next one), and samples every replica at each bin edge. An
engine says how a routed request is served (`_route`), what a sample holds
(`_sample_replicas`) and how the run is measured (`finish`).

Order of events at one instant: a prefill's or a step's end first, then
arrivals, then the series sample at a bin edge (`model.loop`'s priorities).
"""

from collections.abc import Iterable, Sequence
from operator import attrgetter

from model.config import Scenario
from model.gpus.hardware import Profile
from model.gpus.profile import profile_of
from model.loop import ARRIVE, SAMPLE, EventLoop
from model.metrics import BINS
from model.routing.dispatch import Dispatcher
from model.sources.closed import AgentRuns, ClosedUsers, looped_source
from model.sources.traffic import Request

__all__ = ["RunShell"]

_ARRIVAL = attrgetter("arrival_s")


class RunShell:
    """One scenario in progress, either engine: `step()` runs one event, `finish()` the rest and measures."""

    __slots__ = ("scenario", "profile", "notes", "agents", "loop", "dispatch", "bin_s", "_stream")

    def __init__(self, scenario: Scenario, requests: Iterable[Request] | None, limit: int | None) -> None:
        self.scenario = scenario
        self.profile: Profile
        self.profile, self.notes = profile_of(scenario)
        # agent runs and closed users send each request when the one before is answered (model/sources/)
        self.agents: AgentRuns | ClosedUsers | None = looped_source(scenario, limit) if requests is None else None
        self.loop = EventLoop()
        self.bin_s = scenario.duration_s / BINS
        self._stream = False  # the given requests are a stream (a trace being read), not a list

    def _play(self, requests: Iterable[Request]) -> None:
        """Send `requests` at their arrival times (call once, after the replicas are made): the loop's feed, so
        that only the next one is held (a stream read out of order raises as it runs)."""
        self._stream = not isinstance(requests, Sequence)
        self.loop.feed(iter(requests), _ARRIVAL, ARRIVE, self._route)

    def _route_with(self, scenario: Scenario, force: dict[int, int] | None) -> None:
        """The dispatcher for the replicas `scenario` routes to (`force`: request id -> replica, counterfactuals)."""
        self.dispatch = Dispatcher(scenario, force)
        self.notes += self.dispatch.notes

    def _start_sampling(self) -> None:
        self.loop.at(self.bin_s, SAMPLE, self._sample, 1)

    def step(self) -> bool:
        """Run the next event; False once none is left."""
        return self.loop.advance()

    def _route(self, request: Request) -> None:
        raise NotImplementedError

    def _sample(self, b: int) -> None:
        self._sample_replicas(self.loop.now)
        if b < BINS:
            self.loop.at((b + 1) * self.bin_s, SAMPLE, self._sample, b + 1)

    def _sample_replicas(self, now: float) -> None:
        raise NotImplementedError
