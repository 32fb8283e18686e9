"""Run one scenario in serving mode: sessions that wait, routing, batched replicas, measurement.

Requests come from `sessions.ChatSessions` (each turn sent a think gap
after the previous answer's last token) or, if given, from a fixed list or
a stream (a trace being read) sent at their own arrival times. The router sees each replica's tree as it
is at that instant (`ServingReplica.sync` applies the evictions the tokens
generated so far have caused) and its prefill backlog.

Order of events at one instant, as in lab mode: step ends first, then
arrivals, then the series sample at a bin edge. The run goes on until every
session has sent its last turn and every answer is out.
"""

from collections.abc import Iterable

from model.config import Scenario
from model.engines.serving import Seq, ServingReplica
from model.engines.shell import RunShell
from model.loop import ARRIVE
from model.metrics import (
    BINS,
    RequestRecord,
    Result,
    Series,
    bin_busy,
    headline,
    ms,
    per_bin,
    percentile,
    ratio,
    slo_shares,
)
from model.routing.dispatch import held_elsewhere
from model.sources.sessions import ChatSessions
from model.sources.traffic import Request
from model.studies.explainers import fetch_s, link_bytes_per_s

__all__ = ["ServingRun"]


class ServingRun(RunShell):
    """One serving-mode scenario in progress, on the shell of every run; `step()` runs one event, `finish()` the
    rest and measures."""

    __slots__ = ("source", "requests", "replicas", "served", "rejected", "sent", "backlog", "running", "cached",
                 "pinned", "evicted", "fleet", "decoders", "link", "handoff_s", "incoming")

    def __init__(self, scenario: Scenario, requests: Iterable[Request] | None = None, limit: int | None = None,
                 force: dict[int, int] | None = None) -> None:
        fleet = scenario.fleet
        RunShell.__init__(self, scenario, requests, limit)
        if fleet.fetch != "off":
            self.notes += (f"fleet.fetch={fleet.fetch} is modelled in lab mode only: this serving run recomputes "
                           "what a peer holds",)
        # agent runs and closed users send each request when the one before is answered, as chat sessions do
        self.source = ChatSessions(scenario, limit) if requests is None and self.agents is None else None
        self.requests = requests
        budget = self.profile.tokens_in(fleet.memory_gb)
        split = scenario.split
        if not split and (fleet.prefill_replicas or fleet.decode_replicas):
            self.notes += (f"fleet.prefill_replicas={fleet.prefill_replicas} and fleet.decode_replicas="
                           f"{fleet.decode_replicas}: a split needs both above 0, so the replicas are co-located",)
        routed = fleet.prefill_replicas if split else fleet.replicas
        self.replicas = [ServingReplica(i, self.profile, budget, fleet.cache, fleet.chunked_prefill, fleet.token_budget,
                                        fleet.max_running, self.loop, self._done) for i in range(routed)]
        # the split (fleet.prefill_replicas, fleet.decode_replicas): decode replicas take no routed requests; each
        # gets whole prompts' KV over the fleet.handoff link
        self.decoders = [ServingReplica(routed + j, self.profile, budget, fleet.cache, fleet.chunked_prefill,
                                        fleet.token_budget, fleet.max_running, self.loop, self._done)
                         for j in range(fleet.decode_replicas if split else 0)]
        self.fleet = self.replicas + self.decoders  # every replica, in index order
        self.link = link_bytes_per_s(scenario.transfer, fleet.handoff) if split else None
        self.handoff_s = 0.0  # seconds of KV transfer from prefill to decode replicas, summed over requests
        self.incoming = [0] * len(self.decoders)  # [decode replica]: handoffs on their way to it
        if split:
            for r in self.replicas:
                r.role, r.on_handoff = "prefill", self._handoff
            for d in self.decoders:
                d.role = "decode"
            self.notes += (f"split: {routed} prefill and {len(self.decoders)} decode replicas (fleet.replicas="
                           f"{fleet.replicas} is not used); KV handed over by {fleet.handoff}",)
            scenario = scenario.with_values({"fleet.replicas": routed})  # the router sees the prefill replicas
        if fleet.queue_order == "longest_prefix_first":  # the routed replicas only: a decode replica's queue is
            for r in self.replicas:  # handed-over sequences with nothing left to match
                r.guard_s = fleet.queue_guard_s
        self._route_with(scenario, force)
        self.served: list[Seq] = []
        self.rejected: list[Request] = []
        self.sent = 0  # requests sent so far: the next one's id
        n = len(self.fleet)
        self.backlog: list[list[float]] = [[] for _ in range(n)]  # [replica][bin], at bin end
        self.running: list[list[int]] = [[] for _ in range(n)]
        self.cached: list[list[int]] = [[] for _ in range(n)]
        self.pinned: list[list[int]] = [[] for _ in range(n)]
        self.evicted: list[list[int]] = [[] for _ in range(n)]  # at bin end: evicted so far
        if self.agents is not None:
            self.agents.attach(self.loop, self._route)
            for r in self.replicas:
                r.on_first = self._first
        elif self.source is not None and self.source.sessions:
            self.loop.at(self.source.sessions[0].start_s, ARRIVE, self._start_session, 0)
        elif requests is not None:
            self._play(requests)
        self._start_sampling()

    def finish(self) -> Result:
        """Run every event left and measure the run."""
        self.loop.run()
        return _measure(self)

    # -- sending ----------------------------------------------------------------
    def _start_session(self, n: int) -> None:
        sessions = self.source.sessions  # type: ignore[union-attr]
        if n + 1 < len(sessions):  # sessions are in start order: keep only the next one on the heap
            self.loop.at(sessions[n + 1].start_s, ARRIVE, self._start_session, n + 1)
        self._send(n, 0)

    def _send(self, session: int, turn: int) -> None:
        request = self.source.request(self.sent, session, turn, self.loop.now)  # type: ignore[union-attr]
        self._route(request)

    def _route(self, request: Request) -> None:
        now, replicas = self.loop.now, self.replicas
        self.sent += 1
        for r in replicas:
            if now >= r.evict_at:
                r.sync(now)
        view, index = self.dispatch.route(request, replicas, now)
        replica = replicas[index]
        held = held_elsewhere(view, index)
        seq = replica.enqueue(request, now, view.actual(index))
        if seq is None:
            self.rejected.append(request)  # too big for any replica: the session ends here
        else:
            seq.held_elsewhere = held

    def _handoff(self, seq: Seq, now: float) -> None:
        """A prompt is computed on a prefill replica: send its KV to the decode replica with the least load."""
        base = len(self.replicas)  # decode replica j is self.fleet[base + j]
        j = min(range(len(self.decoders)), key=lambda j: (self.decoders[j].in_flight() + self.incoming[j],
                                                            self.decoders[j].hold, j))
        seconds = fetch_s(self.profile, seq.request.prompt_tokens, self.link)  # type: ignore[arg-type]
        self.handoff_s += seconds
        self.incoming[j] += 1
        self.loop.at(now + seconds, ARRIVE, self._handed, base + j, seq)

    def _handed(self, index: int, seq: Seq) -> None:
        self.incoming[index - len(self.replicas)] -= 1
        self.fleet[index].hand_in(seq)

    def _first(self, seq: Seq) -> None:
        self.agents.first_token(seq.request)  # type: ignore[union-attr]

    def _done(self, seq: Seq) -> None:
        if self._stream:  # no one else keeps a stream's requests: keep what is measured, not the prompt
            seq.request = seq.request._replace(keys=(), sizes=())
        self.served.append(seq)
        r = seq.request
        if self.agents is not None:
            self.agents.answered(r)
        if self.source is not None:
            gap = self.source.gap_after(r.session, r.turn)
            if gap is not None:
                self.loop.at(self.loop.now + gap, ARRIVE, self._send, r.session, r.turn + 1)

    def _sample_replicas(self, now: float) -> None:
        for r in self.fleet:
            running, cached = r.kv_split(now)
            self.backlog[r.index].append(round(r.backlog(now), 4))
            self.running[r.index].append(running)
            self.cached[r.index].append(cached)
            self.pinned[r.index].append(r.tree.locked_tokens)
            self.evicted[r.index].append(r.tree.evicted_tokens)


def _measure(run: ServingRun) -> Result:
    scenario, replicas, profile = run.scenario, run.fleet, run.profile
    if any(r.waiting or r.prefilling or r.n_dec for r in replicas):
        raise RuntimeError("the run ended with requests still on a replica")
    served = sorted(run.served, key=lambda s: s.request.id)
    per_token_s = profile.flops_per_token / profile.flops_per_s
    records = []
    e2es: list[float] = []
    tpots: list[float] = []
    stalls: list[float] = []
    makespan, answer_tokens = 0.0, 0
    for s in served:
        r = s.request
        cached = s.cached_tokens
        recomputed = max(0, min(r.prompt_tokens - cached, s.held_elsewhere - cached))
        e2es.append(ms(s.done_s - r.arrival_s))
        tpot = stall = None
        if r.answer_tokens > 1:
            tpot, stall = ms((s.done_s - s.first_token_s) / (r.answer_tokens - 1)), ms(s.stall_s)  # type: ignore[arg-type]
            tpots.append(tpot)
            stalls.append(stall)
        records.append(RequestRecord(
            round(r.arrival_s, 6), r.session, r.turn, r.system_prompt, s.replica, r.prompt_tokens, r.user_tokens,
            r.answer_tokens, cached, recomputed, ms(s.admitted_s - r.arrival_s), ms(s.first_token_s - s.admitted_s),
            ms(s.first_token_s - r.arrival_s), e2es[-1], tpot, stall))
        makespan = max(makespan, s.done_s)
        answer_tokens += r.answer_tokens

    horizon = max(scenario.duration_s, makespan)
    e2es.sort()
    tpots.sort()
    stalls.sort()
    window = scenario.duration_s
    offered = sum(1 for rec in records if rec.arrival_s < window) + sum(1 for r in run.rejected if r.arrival_s < window)
    nominal = run.source.nominal_s() if run.source is not None else [rec.arrival_s for rec in records]
    if run.agents is not None:
        nominal = run.agents.nominal_s()
    ttft_met, tbt_met = slo_shares(records, scenario.slo.ttft_ms, scenario.slo.tbt_ms)
    return Result(
        scenario=scenario,
        **headline(records, [rep.busy_s for rep in replicas], [rep.prefill_compute_s for rep in replicas], horizon),
        makespan_s=round(makespan, 6),
        prefill_gpu_s=round(sum(rep.prefill_compute_s for rep in replicas), 6),
        recompute_gpu_s=round(sum(rec.recomputed_tokens for rec in records) * per_token_s, 6),
        router_overestimate=run.dispatch.overestimate(),
        series=_series(run, records, nominal),
        records=tuple(records),
        tpot_p50_ms=percentile(tpots, 50) if tpots else None,
        tpot_p99_ms=percentile(tpots, 99) if tpots else None,
        e2e_p50_ms=percentile(e2es, 50) if e2es else None,
        e2e_p99_ms=percentile(e2es, 99) if e2es else None,
        stall_p50_ms=percentile(stalls, 50) if stalls else None,
        stall_p99_ms=percentile(stalls, 99) if stalls else None,
        tokens_per_s=round(answer_tokens / horizon, 3),
        offered_rps=round(offered / window, 6),
        configured_rps=round(sum(1 for t in nominal if t < window) / window, 6),
        rejected=len(run.rejected),
        mode="serving",
        hardware=profile.preset,
        kv_budget_tokens=replicas[0].budget,
        notes=run.notes,
        ttft_slo_met=ttft_met,
        tbt_slo_met=tbt_met,
    )


def _series(run: ServingRun, records: list[RequestRecord], nominal: list[float]) -> Series:
    """Per-bin figures over the arrival window; requests sent after it count in no bin."""
    bin_s = run.bin_s
    by_bin: list[list[RequestRecord]] = [[] for _ in range(BINS)]
    for rec in records:
        k = int(rec.arrival_s / bin_s)
        if k < BINS:
            by_bin[k].append(rec)
    configured = [0] * BINS
    for t in nominal:
        if int(t / bin_s) < BINS:
            configured[int(t / bin_s)] += 1
    hit: list[float | None] = []
    p50: list[float | None] = []
    p99: list[float | None] = []
    tpot99: list[float | None] = []
    stall99: list[float | None] = []
    for recs in by_bin:
        ttfts = sorted(r.ttft_ms for r in recs)
        tpots = sorted(r.tpot_ms for r in recs if r.tpot_ms is not None)  # type: ignore[type-var]
        hit.append(ratio(sum(r.cached_tokens for r in recs), sum(r.prompt_tokens for r in recs)) if recs else None)
        p50.append(percentile(ttfts, 50) if recs else None)
        p99.append(percentile(ttfts, 99) if recs else None)
        tpot99.append(percentile(tpots, 99) if tpots else None)
        stalls = sorted(r.stall_ms for r in recs if r.stall_ms is not None)  # type: ignore[type-var]
        stall99.append(percentile(stalls, 99) if stalls else None)
    return Series(
        bin_s=round(bin_s, 6),
        start_s=tuple(round(k * bin_s, 6) for k in range(BINS)),
        requests=tuple(len(recs) for recs in by_bin),
        hit_rate=tuple(hit), ttft_p50_ms=tuple(p50), ttft_p99_ms=tuple(p99),
        replica_load=tuple(tuple(bin_busy([(a, b) for a, b in r.busy], bin_s)) for r in run.fleet),
        replica_backlog_s=tuple(tuple(row) for row in run.backlog),
        kv_running_tokens=tuple(tuple(row) for row in run.running),
        kv_cached_tokens=tuple(tuple(row) for row in run.cached),
        kv_pinned_tokens=tuple(tuple(row) for row in run.pinned),
        evicted_tokens=per_bin(run.evicted),
        requests_configured=tuple(configured),
        tpot_p99_ms=tuple(tpot99),
        stall_p99_ms=tuple(stall99),
    )
