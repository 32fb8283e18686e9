"""Lab mode's run: route every request, prefill it, measure what happened (the seed's model, frozen).

`model.run.start` chooses this engine or serving mode's (`engines.serving_run.ServingRun`,
continuous batching with decode). Both take their speed and KV size from the scenario's
hardware profile; lab mode's `lab` preset is the seed's figures, exactly.

Order of events at one instant: prefill completions first (so a freed
replica and its newly cached answer are visible), then arrivals, then the
series sample at a bin edge. Requests arriving in the window are all served;
the run goes on past `duration_s` until the last queue drains.
"""

from array import array
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import NamedTuple

from model.config import Scenario
from model.engines.replica import Replica, Served
from model.engines.shell import RunShell
from model.gpus.hardware import Profile
from model.holders import FirstKeys
from model.loop import FINISH
from model.metrics import (
    BINS,
    Headline,
    RequestRecord,
    Result,
    Series,
    per_bin,
    percentile,
    ratio,
    rounded,
    rounded_all,
)
from model.routing.dispatch import held_elsewhere
from model.sources.traffic import Request, generate
from model.studies.explainers import fetch_plan, fleet_link

__all__ = ["Run"]

_REQUEST_ID = attrgetter("request.id")  # a served request's place in arrival order
BATCH = 256  # served requests a streaming run measures at a time (each batch in one loop)


class Run(RunShell):
    """One lab-mode scenario in progress: its replicas and what has been served, on the shell of every run.

    `step()` runs one event, so tests can look at the fleet between events;
    `finish()` runs the rest and measures.
    """

    __slots__ = ("requests", "replicas", "served", "backlog", "in_use", "cached", "evicted", "arrived", "link",
                 "sent_last", "_tally")

    def __init__(self, scenario: Scenario, requests: Iterable[Request] | None = None, limit: int | None = None,
                 force: dict[int, int] | None = None, keep_records: bool = True,
                 on_record: Callable[[RequestRecord], None] | None = None) -> None:
        fleet = scenario.fleet
        RunShell.__init__(self, scenario, requests, limit)  # the lab preset: fleet.* speed, 8,192 tokens per GB
        if fleet.prefill_replicas or fleet.decode_replicas:
            self.notes += ("fleet.prefill_replicas and fleet.decode_replicas split serving mode's replicas: lab mode "
                           "has no decode to split off",)
        if fleet.queue_order != "fcfs":
            self.notes += (f"fleet.queue_order={fleet.queue_order} is modelled in serving mode only: lab mode's "
                           "replicas serve first come first served",)
        # agent runs and closed users send as they are answered; chat is a fixed list
        if self.agents is not None:
            self.requests: Iterable[Request] = self.agents.sent  # grows as calls are sent
        else:
            self.requests = generate(scenario, limit) if requests is None else requests
        self.arrived = 0
        self.sent_last: dict[int, int] = {}  # conversation (a request's session) -> the replica its last turn went to
        p = self.profile
        timing = p.prefill_s if p.measured is not None else None  # a measured GPU prices each pass itself
        heads = FirstKeys() if fleet.cache else None  # which trees hold which first keys: routers peek only those
        self.replicas = [Replica(i, p.tokens_in(fleet.memory_gb), fleet.cache, p.overhead_s, p.prefill_tokens_per_s(),
                                 timing, heads) for i in range(fleet.replicas)]
        self.link = fleet_link(scenario)  # bytes a second a replica fetches a peer's prefix at; None: it never does
        if self.link is not None:
            for r in self.replicas:
                r.fetcher = self._fetch
        self._route_with(scenario, force)
        self.dispatch.heads = heads
        self.served: list[Served] = []  # every served request, if it keeps them (else measured as served)
        # a run that keeps its records measures them at the end; one that streams, as each is served
        self._tally = None if keep_records and on_record is None else \
            _Tally(scenario, fleet.replicas, self.bin_s, self.profile, keep_records, on_record)
        self.backlog: list[list[float]] = [[] for _ in self.replicas]  # [replica][bin]: backlog at bin end
        self.in_use: list[list[int]] = [[] for _ in self.replicas]  # [replica][bin] at bin end: locked tree tokens
        self.cached: list[list[int]] = [[] for _ in self.replicas]  # [replica][bin] at bin end: the rest of the tree
        self.evicted: list[list[int]] = [[] for _ in self.replicas]  # [replica][bin] at bin end: evicted so far
        if self.agents is not None:
            self.agents.attach(self.loop, self._route)
        else:
            self._play(self.requests)
        self._start_sampling()

    def finish(self) -> Result:
        """Run every event left and measure the run."""
        self.loop.run()
        kv = (self.in_use, self.cached, self.evicted)
        if self._tally is not None:
            return self._tally.result(self.arrived, self.replicas, self.backlog, self.profile, self.notes, kv,
                                      self.dispatch.overestimate())
        return _measure(self.scenario, self.arrived, self.served, self.replicas, self.backlog, self.bin_s,
                        self.profile, self.notes, kv, self.dispatch.overestimate())

    def _start(self, replica: Replica) -> None:
        loop = self.loop
        replica.start_next(loop.now)
        loop.push(replica.busy_until, FINISH, self._finish, (replica,))  # a prefill never ends before it starts

    def _finish(self, replica: Replica) -> None:
        served = replica.finish()
        if self._stream:  # no one else keeps a stream's requests: keep what is measured, not the prompt
            served.request = served.request._replace(keys=(), sizes=())
        if self._tally is not None:
            self._tally.add(served)
        else:
            self.served.append(served)
        if self.agents is not None:  # lab mode: the first token and the whole answer come when prefill ends
            self.agents.first_token(served.request)
            self.agents.answered(served.request)
        if replica.queue:
            self._start(replica)

    def _fetch(self, replica: Replica, request: Request, matched: int) -> tuple[int, float]:
        """What `replica` would fetch of `request` beyond its `matched` tokens: the best peer's match, if faster."""
        keys = request.keys
        peer = max((r.tree.peek(keys) for r in self.replicas if r is not replica), default=0)
        return fetch_plan(self.profile, peer - matched, self.link)

    def _route(self, request: Request) -> None:
        replicas, loop = self.replicas, self.loop
        self.arrived += 1
        view, index = self.dispatch.route(request, replicas, loop.now)
        replica = replicas[index]
        if replica.running is None:  # idle: it starts at once
            ticket = replica.start_now(request, loop.now)  # its match is the chosen tree's: no second walk of it
            loop.push(replica.busy_until, FINISH, self._finish, (replica,))
        else:
            ticket = replica.enqueue(request)
        sent = self.sent_last  # the replica a conversation's turn before went to: likeliest to hold its history
        ticket.held_elsewhere = held_elsewhere(view, index, ticket.cached_tokens, sent.get(request.session, -1))
        sent[request.session] = index

    def _sample_replicas(self, now: float) -> None:
        for r in self.replicas:
            self.backlog[r.index].append(rounded(r.backlog(now), 4))
            self.in_use[r.index].append(r.tree.locked_tokens)
            self.cached[r.index].append(r.tree.total_tokens - r.tree.locked_tokens)
            self.evicted[r.index].append(r.tree.evicted_tokens)


def _measure(scenario: Scenario, arrived: int, served: list[Served], replicas: list[Replica],
             backlog: list[list[float]], bin_s: float, profile: Profile, notes: tuple[str, ...],
             kv: tuple[list[list[int]], list[list[int]], list[list[int]]], overestimate: float) -> Result:
    """Measure a finished run from all its served requests (kept, as most runs do), in arrival order."""
    served.sort(key=_REQUEST_ID)
    tally = _Tally(scenario, len(replicas), bin_s, profile, keep=True)
    tally.take_all(served)
    return tally.result(arrived, replicas, backlog, profile, notes, kv, overestimate)


class _Tally:
    """What a lab-mode run measures, gathered one served request at a time in arrival order.

    A run that keeps its requests sorts them and hands them over at the end (`_measure`); a run that
    streams (`Run(keep_records=False)`, a long trace) hands each over as it is served (`add`), which
    holds the ones served before an earlier request until that one is (`_early`), measures them in
    batches, and keeps no record: each is given to `on_record` and dropped. Either way every sum and
    list below sees the same values in the same order, so the two give equal results.
    """

    __slots__ = ("scenario", "duration_s", "bin_s", "tokens_per_s", "keep", "on_record", "records", "headline", "bins", "busy",
                 "prefill_ms", "makespan", "fetched", "fetch_s", "offered_n", "recomputed_sum", "taken", "_early",
                 "_next", "_ready")

    def __init__(self, scenario: Scenario, n_replicas: int, bin_s: float, profile: Profile, keep: bool,
                 on_record: Callable[[RequestRecord], None] | None = None) -> None:
        self.scenario, self.bin_s, self.keep, self.on_record = scenario, bin_s, keep, on_record
        self.duration_s = scenario.duration_s  # read once per request
        self.tokens_per_s = profile.prefill_tokens_per_s()
        self.records: list[RequestRecord] = []  # kept only if `keep`
        self.headline = Headline(n_replicas)
        # the series' per-bin inputs: TTFTs (ms), cached and prompt tokens
        self.bins = _Bins([array("d") for _ in range(BINS)], [0] * BINS, [0] * BINS)
        self.busy = [[0.0] * BINS for _ in range(n_replicas)]  # [replica][bin]: busy seconds
        self.prefill_ms: dict[float, float] = {}  # prefill seconds -> ms, rounded
        self.makespan = self.fetch_s = 0.0
        self.fetched = self.offered_n = self.recomputed_sum = 0  # sent inside the window; recomputed that a peer held
        self.taken = 0  # requests measured
        self._early: dict[int, Served] = {}  # request id -> served before an earlier request was
        self._next = 0  # the request id to measure next
        self._ready: list[Served] = []  # in arrival order, not measured yet

    def add(self, s: Served) -> None:
        """Measure `s` once every earlier request has been: in batches of `BATCH`, and the rest at the end."""
        rid = s.request.id
        if rid != self._next:
            self._early[rid] = s
            return
        ready, early = self._ready, self._early
        ready.append(s)
        self._next += 1
        while early and self._next in early:
            ready.append(early.pop(self._next))
            self._next += 1
        if len(ready) >= BATCH:
            self.take_all(ready)
            ready.clear()

    def take_all(self, served: Sequence[Served]) -> None:
        """Measure served requests, the next ones in arrival order: the loop runs once per request, so what it
        adds up is kept in local names and stored once at the end."""
        duration_s, bin_s, keep, on_record = self.duration_s, self.bin_s, self.keep, self.on_record
        prefill_ms_of, records, bins, busy = self.prefill_ms, self.records, self.bins, self.busy
        h = self.headline
        h_requests, h_cached, h_prompt, ttfts = h.requests, h.cached, h.prompt, h.ttfts
        bin_ttfts, bin_cached, bin_prompt = bins.ttfts, bins.cached, bins.prompt
        recomputed_sum, fetched, fetch_s, offered_n = self.recomputed_sum, self.fetched, self.fetch_s, self.offered_n
        makespan, continuing, found, taken = self.makespan, h.continuing, h.found, self.taken
        top = BINS - 1
        make = tuple.__new__
        arrivals = rounded_all([s.request.arrival_s for s in served], 6)  # as records keep them: rounded once, all
        for s, arrival in zip(served, arrivals):
            # the request's fields in one unpacking, not one attribute look-up each
            _, arrival_s, session, turn, system_prompt, _, _, user_tokens, answer_tokens, _, prompt, _, _ = s.request
            cached = s.cached_tokens
            got = s.fetched_tokens
            have = cached + got  # fetched tokens are not recomputed
            missing, elsewhere = prompt - have, s.held_elsewhere - have
            recomputed = missing if missing < elsewhere else elsewhere
            if recomputed > 0:
                recomputed_sum += recomputed
            else:
                recomputed = 0
            fetched += got
            fetch_s += s.fetch_s
            if arrival < duration_s:
                offered_n += 1
            start = s.start_s
            queue_s = start - arrival_s
            prefill_s = s.prefill_s
            prefill_ms = prefill_ms_of.get(prefill_s)  # the ms values as `ms()` rounds them, written out
            if prefill_ms is None:  # prefill times repeat (they follow the uncached tokens): each rounded once
                if len(prefill_ms_of) > 65_536:  # a stream of many sizes: start again (the values are the same)
                    prefill_ms_of.clear()
                prefill_ms = prefill_ms_of[prefill_s] = rounded(prefill_s * 1000.0, 3)
            if queue_s == 0.0:  # started as it arrived: `ms(0.0)` is 0.0 and its TTFT is its prefill, to the bit
                queue_ms, ttft_ms = 0.0, prefill_ms
            else:
                queue_ms, ttft_ms = rounded(queue_s * 1000.0, 3), rounded((queue_s + prefill_s) * 1000.0, 3)
            i = s.replica
            record: RequestRecord = make(RequestRecord, (  # RequestRecord(...) without its Python-level __new__
                arrival, session, turn, system_prompt, i, prompt,
                user_tokens, answer_tokens, cached, recomputed, queue_ms, prefill_ms, ttft_ms, None, None, None))
            if keep:
                records.append(record)
            if on_record is not None:
                on_record(record)
            h_requests[i] += 1  # `Headline.add(record)`, written out
            h_cached[i] += cached
            h_prompt[i] += prompt
            ttfts.append(ttft_ms)
            if turn > 0 and user_tokens >= 0:
                continuing += 1
                found += cached >= prompt - user_tokens
            k = int(arrival / bin_s)
            if k > top:
                k = top
            bin_ttfts[k].append(ttft_ms)
            bin_cached[k] += cached
            bin_prompt[k] += prompt
            end = start + prefill_s
            if end > makespan:
                makespan = end
            # spread the prefill's busy time over the bins it covers (min and max as comparisons)
            a, b = start, end
            row = busy[i]
            first, stop = int(a / bin_s), int(b / bin_s) + 1
            taken += 1
            if stop == first + 1 and first < BINS:  # one bin (most prefills): the loop below, once, written out
                hi, lo = stop * bin_s, first * bin_s
                overlap = (b if b < hi else hi) - (a if a > lo else lo)
                if overlap > 0:
                    row[first] += overlap
                continue
            for k in range(first, stop if stop < BINS else BINS):
                hi, lo = (k + 1) * bin_s, k * bin_s
                overlap = (b if b < hi else hi) - (a if a > lo else lo)
                if overlap > 0:
                    row[k] += overlap
        self.recomputed_sum, self.fetched, self.fetch_s, self.offered_n = recomputed_sum, fetched, fetch_s, offered_n
        self.makespan, h.continuing, h.found, self.taken = makespan, continuing, found, taken

    def result(self, arrived: int, replicas: list[Replica], backlog: list[list[float]], profile: Profile,
               notes: tuple[str, ...], kv: tuple[list[list[int]], list[list[int]], list[list[int]]],
               overestimate: float) -> Result:
        """The run's Result, once every request is served."""
        self.take_all(self._ready)
        self._ready.clear()
        self.take_all([self._early.pop(rid) for rid in sorted(self._early)])  # ids with gaps in them: the rest
        if self.taken != arrived:
            raise RuntimeError(f"served {self.taken} of {arrived} requests")
        scenario = self.scenario
        duration = scenario.duration_s
        horizon = max(duration, self.makespan)
        offered = round(self.offered_n / duration, 6)
        recompute_s = self.recomputed_sum / self.tokens_per_s
        busy = [rep.busy_s for rep in replicas]
        return Result(
            scenario=scenario,
            **self.headline.figures(busy, busy, horizon),
            makespan_s=round(self.makespan, 6),
            prefill_gpu_s=round(sum(busy), 6),
            recompute_gpu_s=round(recompute_s, 6),
            router_overestimate=overestimate,
            series=_series(self.bins, self.busy, backlog, self.bin_s, kv),
            records=tuple(self.records),
            offered_rps=offered,
            configured_rps=offered,  # lab mode sends on the open-loop schedule
            hardware=profile.preset,
            kv_budget_tokens=profile.tokens_in(scenario.fleet.memory_gb),
            notes=notes,
            fetched_tokens=self.fetched,
            fetch_s=round(self.fetch_s, 6),
        )


class _Bins(NamedTuple):
    """Per bin of arrival time: its requests' TTFTs (ms), and their cached and prompt tokens."""

    ttfts: list[array]
    cached: list[int]
    prompt: list[int]


def _series(bins: _Bins, busy: list[list[float]], backlog: list[list[float]], bin_s: float,
            kv: tuple[list[list[int]], list[list[int]], list[list[int]]]) -> Series:
    hit: list[float | None] = []
    p50: list[float | None] = []
    p99: list[float | None] = []
    for values, cached, prompt in zip(*bins):
        if not values:
            hit.append(None)
            p50.append(None)
            p99.append(None)
            continue
        ttfts = sorted(values)
        hit.append(ratio(cached, prompt))
        p50.append(percentile(ttfts, 50))
        p99.append(percentile(ttfts, 99))
    counts = tuple(len(ttfts) for ttfts in bins.ttfts)
    running = tuple(tuple(row) for row in kv[0])  # lab mode: prefixes locked by queued and running requests
    return Series(
        bin_s=round(bin_s, 6),
        start_s=tuple(round(k * bin_s, 6) for k in range(BINS)),
        requests=counts,
        hit_rate=tuple(hit), ttft_p50_ms=tuple(p50), ttft_p99_ms=tuple(p99),
        replica_load=tuple(tuple(rounded_all([x / bin_s if x < bin_s else 1.0 for x in row], 4)) for row in busy),
        replica_backlog_s=tuple(tuple(row) for row in backlog),
        kv_running_tokens=running,
        kv_cached_tokens=tuple(tuple(row) for row in kv[1]),
        kv_pinned_tokens=running,
        evicted_tokens=per_bin(kv[2]),
        requests_configured=counts,
        tpot_p99_ms=(None,) * BINS,
        stall_p99_ms=(None,) * BINS,
    )
