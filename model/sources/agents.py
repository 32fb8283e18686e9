"""Agent traffic: runs of tool calls whose every prompt repeats almost all of the one before.

A run (one agent at work on one task) starts at a Poisson time
(`traffic.agent_rate` runs a second, bursts multiplying it as they do chat
sessions) and makes a geometric number of calls (mean `traffic.agent_steps`,
at least one). Its prompt is a system prompt (Zipf-picked as chat's, from the
surge set during a tenant surge), the tool definitions that go with it
(`traffic.agent_tools_tokens`, shared by every run with that system prompt),
the task (a user turn), then everything the run has done: each call adds the
model's answer (a tool call, `traffic.answer_mean`) and the tool's result
(`traffic.agent_result_tokens`). So call k is call k-1's prompt, its answer
and one tool result: at the defaults, 96 to 97 per cent of a late call's
prompt is the previous prompt, byte for byte.

Calls wait for answers (both modes): call k+1 is sent a tool's time
(`traffic.agent_tool_s`) after call k's answer is complete (lab mode: when
its prefill ends; serving mode: at its last token).

Fan-out: with `traffic.agent_fanout` = N > 0, every `agent_fanout_every`-th
call is a fan-out: its tool result (`agent_fanout_tokens`) is read by N
sub-calls, each adding its own instruction (`agent_branch_tokens`). Sent all
at once, they race: each is routed before any has cached the shared result,
so each computes it (a replica that queues them FCFS finds it cached by the
one before; a batch that admits them together does not). The article's fix,
`traffic.agent_warm_first`: send one sub-call, and the rest at its first
token, when its prompt is cached. The run goes on once every sub-call has
answered, its next prompt holding the sub-calls' answers (`join`).

Segments are keyed by run, call and sub-call, so no run shares anything with
another but its system prompt and tools. Randomness: run starts from the
`agent-arrivals` stream, run content from `agents`, all drawn before any
call is sent, so the fleet and the router change when calls are sent, never
what they say. A run that starts inside the window makes all its calls.
"""

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import NamedTuple

from model.config import Scenario, Traffic
from model.loop import ARRIVE, EventLoop
from model.metrics import RequestRecord
from model.rng import stream
from model.sources.traffic import Request, TooManyRequests, _session_starts, _system_segments, _zipf_cumulative

__all__ = ["AgentRun", "AgentRuns", "fanout_figures"]


class AgentRun(NamedTuple):
    """One agent run as drawn, before any fleet decides when its calls are sent."""

    id: int  # its place in start order
    start_s: float
    system_prompt: int
    task_tokens: int
    calls: tuple[tuple[int, int, float], ...]  # per call: (tool result tokens before it, answer tokens, tool s after)
    branch_answers: dict[int, tuple[int, ...]]  # fan-out call -> its sub-calls' answer tokens


class AgentRuns:
    """A request source that sends each call of each run when the run is ready for it.

    The engine `attach`es its event loop and its routing function, then tells the source of
    every call's first token (`first_token`) and complete answer (`answered`); the source
    schedules the sends on the loop (at ARRIVE priority) and numbers requests as it sends them.
    """

    __slots__ = ("scenario", "runs", "sent", "loop", "route", "first_timestamp", "history", "pending", "unsent",
                 "shared", "call_of", "heads")

    def __init__(self, scenario: Scenario, limit: int | None = None) -> None:
        self.scenario = scenario
        self.runs = _draw(scenario, limit)
        self.sent: list[Request] = []  # every request sent so far, in send order (its id is its index)
        self.loop: EventLoop | None = None
        self.route: Callable[[Request], None] | None = None
        self.first_timestamp = min((e.at_s for e in scenario.events_of("timestamp")), default=math.inf)
        self.history: dict[int, tuple[tuple, tuple, int]] = {}  # run -> keys, sizes, tokens after the head
        self.pending: dict[int, int] = {}  # run -> answers its current call still waits for
        self.unsent: dict[int, int] = {}  # run -> sub-calls held back until the first one's first token
        self.shared: dict[int, tuple[tuple, tuple, int]] = {}  # run -> what its held-back sub-calls share
        self.call_of: dict[int, tuple[int, int, int]] = {}  # request id -> (run, call, sub-call or -1)
        self.heads: dict[int, tuple[tuple, tuple]] = {}  # system prompt -> its segments and tools, no dynamic text

    def attach(self, loop: EventLoop, route: Callable[[Request], None]) -> None:
        """Start sending on `loop`; each request built is handed to `route` at its send time."""
        self.loop, self.route = loop, route
        if self.runs:
            loop.at(self.runs[0].start_s, ARRIVE, self._begin, 0)

    def first_token(self, request: Request) -> None:
        """A call's first token is out: its prompt is cached, so held-back sub-calls may go."""
        run, call, branch = self.call_of[request.id]
        if branch == 0 and self.unsent.pop(run, 0):
            self.loop.at(self.loop.now, ARRIVE, self._send_rest, run, call)  # type: ignore[union-attr]

    def answered(self, request: Request) -> None:
        """A call's answer is complete; once every sub-call's is, the run's next call follows a tool's time."""
        run, call, _ = self.call_of[request.id]
        self.pending[run] -= 1
        calls = self.runs[run].calls
        if not self.pending[run] and call + 1 < len(calls):
            loop = self.loop
            loop.at(loop.now + calls[call][2], ARRIVE, self._call, run, call + 1)  # type: ignore[union-attr]

    def nominal_s(self) -> list[float]:
        """Every call's send time were each answered at once (start plus the tools' times), in run order."""
        out = []
        for run in self.runs:
            at = run.start_s
            for call, (_, _, tool_s) in enumerate(run.calls):
                out += [at] * len(run.branch_answers.get(call, (0,)))
                at += tool_s
        return out

    # -- sending ----------------------------------------------------------------------
    def _begin(self, n: int) -> None:
        if n + 1 < len(self.runs):  # runs are in start order: keep only the next one on the heap
            self.loop.at(self.runs[n + 1].start_s, ARRIVE, self._begin, n + 1)  # type: ignore[union-attr]
        self._call(n, 0)

    def _call(self, run: int, call: int) -> None:
        after = self._grow(run, call)
        branches = self.runs[run].branch_answers.get(call)
        if branches is None:
            self.pending[run] = 1
            self._send(run, call, -1, after)
            return
        self.pending[run] = len(branches)
        first_only = self.scenario.traffic.agent_warm_first and len(branches) > 1
        if first_only:
            self.unsent[run] = len(branches) - 1
            self.shared[run] = after
        for b in range(1 if first_only else len(branches)):
            self._send(run, call, b, after)

    def _send_rest(self, run: int, call: int) -> None:
        after = self.shared.pop(run)
        for b in range(1, len(self.runs[run].branch_answers[call])):
            self._send(run, call, b, after)

    def _grow(self, run: int, call: int) -> tuple[tuple, tuple, int]:
        """What call `call` sends after the head, and how many of those tokens an earlier call sent
        (so a tree may hold them); the run's history becomes that, which every later call repeats."""
        r = self.runs[run]
        past_keys, past_sizes, past_tokens = self.history.get(run, ((), (), 0))
        new_keys: tuple
        new_sizes: tuple[int, ...]
        if call == 0:  # the task
            new_keys, new_sizes, seen = (("task", run),), (r.task_tokens,), 0
        elif call - 1 in r.branch_answers:  # after a fan-out: the sub-calls' answers, joined
            new_keys, new_sizes, seen = (("join", run, call - 1),), (sum(r.branch_answers[call - 1]),), 0
        else:  # the answer before (cached with its prompt) and the tool result it asked for
            answer = r.calls[call - 1][1]
            new_keys, new_sizes, seen = (("answer", run, call - 1), ("result", run, call)), (answer, r.calls[call][0]), \
                answer
        self.history[run] = (past_keys + new_keys, past_sizes + new_sizes, past_tokens + sum(new_sizes))
        return past_keys + new_keys, past_sizes + new_sizes, past_tokens + seen

    def _send(self, run: int, call: int, branch: int, after: tuple[tuple, tuple, int]) -> None:
        """Build call `call` of `run` (sub-call `branch`, -1 for a plain call) as sent now, and route it."""
        t, r = self.scenario.traffic, self.runs[run]
        at, rid = self.loop.now, len(self.sent)  # type: ignore[union-attr]
        mode = "top" if at >= self.first_timestamp else self.scenario.dynamic_text
        dyn_key = ("dyn", run, call, branch)
        if mode == "top":
            head_keys, head_sizes = _head(r.system_prompt, t, dyn_key)
        else:
            if r.system_prompt not in self.heads:
                self.heads[r.system_prompt] = _head(r.system_prompt, t, None)
            head_keys, head_sizes = self.heads[r.system_prompt]
        after_keys, after_sizes, seen = after
        fresh = sum(head_sizes) + seen  # tokens before the first segment new in this call
        answer_key: tuple = ("answer", run, call)
        own, answer_tokens = after_sizes[-1], r.calls[call][1]
        keys, sizes = head_keys + after_keys, head_sizes + after_sizes
        if branch >= 0:
            if branch > 0:  # the shared tool result may be cached by the first sub-call
                fresh = sum(sizes)
            keys, sizes = keys + (("branch", run, call, branch),), sizes + (t.agent_branch_tokens,)
            own, answer_tokens = t.agent_branch_tokens, r.branch_answers[call][branch]
            answer_key = ("answer", run, call, branch)
        if mode == "top":
            fresh = t.dynamic_at  # nothing after the timestamp can match
        elif mode == "bottom":
            keys, sizes = keys + (dyn_key,), sizes + (t.dynamic_tokens,)
        request = Request(rid, at, run, call, r.system_prompt, keys, sizes, own, answer_tokens, answer_key,
                          sum(sizes), fresh, f"prompt/{r.system_prompt}")
        self.sent.append(request)
        self.call_of[rid] = (run, call, branch)
        self.route(request)  # type: ignore[misc]


def _head(prompt: int, t: Traffic, dynamic: tuple | None) -> tuple[tuple, tuple]:
    """The system prompt's segments (dynamic text in the cut if given), then the tool definitions."""
    keys, sizes = _system_segments(prompt, t, dynamic)
    if t.agent_tools_tokens:
        keys, sizes = keys + (("tools", prompt),), sizes + (t.agent_tools_tokens,)
    return keys, sizes


def _draw(scenario: Scenario, limit: int | None) -> list[AgentRun]:
    """Every run starting inside the window, with all its calls, in start order."""
    t = scenario.traffic
    surges = [(e.at_s, e.ends_s()) for e in scenario.events_of("surge")]
    normal_cum = _zipf_cumulative(t.system_prompts, t.zipf_s)
    surge_cum = _zipf_cumulative(t.surge_system_prompts, t.zipf_s)
    p_next = 1.0 - 1.0 / t.agent_steps
    answer_lo, answer_hi = t.answer_mean - t.answer_mean // 2, t.answer_mean + t.answer_mean // 2
    result_lo, result_hi = t.agent_result_tokens - t.agent_result_tokens // 2, \
        t.agent_result_tokens + t.agent_result_tokens // 2
    random_ = stream(scenario.seed, "agents").random
    runs, count = [], 0
    for n, start in enumerate(_session_starts(scenario, limit, t.agent_rate, "agent-arrivals")):
        pick = random_()
        task = int(t.user_min + random_() * (t.user_max - t.user_min + 1))
        calls: list[tuple[int, int, float]] = []
        branches: dict[int, tuple[int, ...]] = {}
        while True:
            k = len(calls)
            fanout = t.agent_fanout > 0 and k > 0 and (k + 1) % t.agent_fanout_every == 0
            result = int(result_lo + random_() * (result_hi - result_lo + 1))
            answer = int(answer_lo + random_() * (answer_hi - answer_lo + 1))
            tool_s = t.agent_tool_s * (0.5 + random_())
            if fanout:
                result = t.agent_fanout_tokens
                branches[k] = tuple(int(answer_lo + random_() * (answer_hi - answer_lo + 1))
                                    for _ in range(t.agent_fanout))
            calls.append((result if k else 0, answer, tool_s))
            count += len(branches.get(k, (0,)))
            if limit is not None and count > limit:
                raise TooManyRequests(limit)
            if random_() >= p_next:
                break
        surging = any(a <= start < b for a, b in surges)
        cum = surge_cum if surging else normal_cum
        runs.append(AgentRun(n, start, bisect_left(cum, pick * cum[-1]), task, tuple(calls), branches))
    return runs


def fanout_figures(records: Iterable[RequestRecord]) -> dict[str, float | int]:
    """The fan-out race in a run's records: sub-calls are records sharing a run and a call.

    A sub-call `read` the shared prefix if its replica held all of its prompt but its own
    instruction when it started, else it `computed` it again (with dynamic text at the bottom of
    every prompt, none can read it all). `span_p50_ms`: from a fan-out's first send to its last
    sub-call's first token, the median over fan-outs.
    """
    groups: dict[tuple[int, int], list[RequestRecord]] = {}
    for rec in records:
        groups.setdefault((rec.session, rec.turn), []).append(rec)
    read = computed = 0
    spans: list[float] = []
    for recs in groups.values():
        if len(recs) < 2:
            continue
        for rec in recs:
            if rec.cached_tokens >= rec.prompt_tokens - rec.user_tokens:
                read += 1
            else:
                computed += 1
        first = min(rec.arrival_s for rec in recs)
        spans.append(round(max(rec.arrival_s * 1000 + rec.ttft_ms for rec in recs) - first * 1000, 3))
    spans.sort()
    return {"fanouts": len(spans), "subcalls": read + computed, "read": read, "computed": computed,
            "span_p50_ms": spans[(len(spans) - 1) // 2] if spans else 0.0}
