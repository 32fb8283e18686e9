"""Serving mode's replica: continuous batching with decode under one KV budget.

Steps. A replica runs one step at a time. In a step every decoding sequence
makes one token and some prefill tokens are computed; it lasts
`Profile.step_s(prefill tokens, context tokens read, chunks, decodes)`: on
the article's arithmetic the slower of the arithmetic and the memory
reads; on a measured GPU one forward pass of the chunks (each attending to
the prompt before it) and the decodes. A prompt's first token comes at the end of
the step that computes its last prompt token (that is its TTFT); each later
step adds one token; a request ends with its `answer_tokens`-th token.

Scheduling (`_plan`, the only place the rule lives), after vLLM v1's
`Scheduler.schedule()`: one token budget per step (`fleet.token_budget`,
vLLM's max_num_batched_tokens), at most `fleet.max_running` sequences.
- Chunked prefill (`fleet.chunked_prefill`, the default, as in vLLM v1 and
  SGLang): running sequences first, each decode taking one token, then
  prefills already under way; then waiting requests, first come first
  served, take what is left, the last one split if it does not fit.
- Prefill-first (chunking off, vLLM's scheduler before chunked prefill): if
  a waiting request can be admitted, the step runs new prompts only (whole,
  as many as the budget holds, at least one) and every decode waits for it.

Closed form. A run of decode-only steps is one event: with the batch fixed,
step k reads k more tokens per sequence, so `Profile.decode_steps_s` gives
the run's length exactly and the event lands where the first sequence
ends. A request arriving mid-run cuts it at the next step boundary
(`Profile.decode_steps_within`; steps are atomic).

Queue order (`fleet.queue_order`): first come first served, or longest
cached prefix first with a starvation guard (`_longest_prefix_first`).
Either way the head of the queue blocks the rest.

Memory: `budget` tokens per replica, shared. Running sequences hold their
prompt's uncached part from admission and, once the prompt is computed
and put in the tree (locked while they run, shared with anyone who
matches it), the tokens they have generated. The prefix tree gets the rest:
`tree.capacity = budget - running`, so as running sequences grow the tree
evicts its least recently used unlocked leaves. Invariant, at every step:
running + cached <= budget (`check`).

Admission, not preemption: a request is admitted only if the locked tree
tokens, what every running sequence may still come to hold (its uncached
prompt and its whole answer) and its own share fit in the budget. The
simulation knows each answer's length, so this is exact: a running
sequence can always grow by evicting cache and nothing is ever preempted;
a request that does not fit waits at the head of the queue, and the ones
behind it wait too (first come first served). Real engines do not know the
length: vLLM admits on the prompt and, when a step finds no free block,
preempts the newest sequence and recomputes it later; SGLang estimates and
retracts. Waiting is what they aim for; their fallback is not modelled. A
request whose prompt and answer exceed the whole budget is rejected.
"""

import heapq
import itertools
import math
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Sequence

from model.gpus.hardware import Profile
from model.loop import START, STEP, EventLoop
from model.radix import Node, RadixTree
from model.sources.traffic import Request

__all__ = ["Seq", "ServingReplica", "Stalls"]


class Stalls:
    """The gaps between a replica's token steps, kept so each sequence can ask for its longest one.

    Token steps come in segments (a run of decode steps, or one step that also prefilled); a
    sequence's steps are whole segments, from the one after it joined to the one it ends in.
    A segment stores its first step's end and its longest gap after the first step (the last,
    as steps only grow within a run); the longest gap of every segment, the first one's
    counted from the replica's previous token, goes on a monotonic stack for suffix maxima.
    """

    __slots__ = ("last_token_s", "first_end", "tail", "stack_at", "stack_gap")

    def __init__(self) -> None:
        self.last_token_s = 0.0  # end of the last step that made decode tokens
        self.first_end: list[float] = []  # [segment]: end of its first step
        self.tail: list[float] = []  # [segment]: longest gap after its first step (0: one step)
        self.stack_at: list[int] = []  # segments whose longest gap no later segment reaches, in order
        self.stack_gap: list[float] = []

    def add(self, first_end: float, tail: float, end: float) -> None:
        """A segment of token steps ending at `end`: its first step ended at `first_end`."""
        gap = max(first_end - self.last_token_s, tail)
        while self.stack_gap and self.stack_gap[-1] <= gap:
            self.stack_at.pop()
            self.stack_gap.pop()
        self.stack_at.append(len(self.first_end))
        self.stack_gap.append(gap)
        self.first_end.append(first_end)
        self.tail.append(tail)
        self.last_token_s = end

    def longest(self, first: int, first_token_s: float) -> float:
        """The longest gap between tokens of a sequence whose first token came at `first_token_s` and
        whose decode steps are segment `first` to the last one added."""
        gap = max(self.first_end[first] - first_token_s, self.tail[first])
        if first + 1 < len(self.first_end):
            gap = max(gap, self.stack_gap[bisect_left(self.stack_at, first + 1)])
        return gap


class Seq:
    """One request on a serving replica, from routing to its last token."""

    __slots__ = ("request", "replica", "lock", "cached_tokens", "held_elsewhere", "estimate_s", "todo", "uncached",
                 "join", "segment", "admitted_s", "first_token_s", "done_s", "stall_s")

    def __init__(self, request: Request, replica: int, estimate_s: float) -> None:
        self.request = request
        self.replica = replica
        self.lock: Node | None = None  # tree node locked for it while it runs
        self.cached_tokens = 0  # matched when admitted
        self.held_elsewhere = 0  # most tokens another replica held at routing (set by the run)
        self.estimate_s = estimate_s  # prefill seconds expected at routing (the router's backlog)
        self.todo = 0  # prompt tokens still to compute
        self.uncached = 0  # prompt tokens it computes: held outside the tree until its prefill ends
        self.join = 0  # the replica's step count when it began decoding
        self.segment = 0  # the replica's first segment of token steps after it began decoding (see Stalls)
        self.admitted_s = 0.0
        self.first_token_s = 0.0
        self.done_s = 0.0
        self.stall_s: float | None = None  # longest gap between two of its tokens (None: one token)


class ServingReplica:
    """A serving replica's queue, running batch, prefix tree and KV budget."""

    __slots__ = ("index", "profile", "tree", "cache", "budget", "chunked", "token_budget", "max_running", "loop",
                 "on_done", "waiting", "prefilling", "finishing", "n_dec", "ctx_base", "gen_base", "private_prompt",
                 "hold", "steps", "queued_work_s", "todo_tokens", "per_token_s", "evict_at", "last_routed", "t0",
                 "run_steps", "run_kv", "chunks", "with_decodes", "end_s", "epoch", "busy", "busy_s", "prefill_compute_s",
                 "stalls", "order", "on_first", "token_steps", "role", "on_handoff",
                 "guard_s")

    def __init__(self, index: int, profile: Profile, budget: int, cache: bool, chunked: bool, token_budget: int,
                 max_running: int, loop: EventLoop, on_done: Callable[[Seq], None]) -> None:
        self.index = index
        self.profile = profile
        self.tree = RadixTree(budget if cache else 0)
        self.cache = cache
        self.budget = budget  # KV tokens: running sequences and the prefix tree together
        self.chunked = chunked
        self.token_budget = token_budget
        self.max_running = max_running
        self.loop = loop
        self.on_done = on_done  # called with each finished sequence, at its last token
        self.waiting: deque[Seq] = deque()  # routed here, not admitted
        self.prefilling: list[Seq] = []  # admitted, prompt not yet computed, in admission order
        self.finishing: list[tuple[int, int, Seq]] = []  # heap of (step of its last token, order of joining, seq)
        # Decoding sequences, in running totals (step = self.steps; no per-sequence work per step):
        self.n_dec = 0
        self.ctx_base = 0  # sum of prompt + 1 - join: their context is ctx_base + n_dec * step
        self.gen_base = 0  # sum of 1 - join: their generated tokens are gen_base + n_dec * step
        self.private_prompt = 0  # prompt tokens held outside the tree (all of them with the cache off)
        self.hold = 0  # what running sequences may still come to hold outside the tree, at most
        self.steps = 0  # steps run that made decode tokens
        self.queued_work_s = 0.0  # prefill seconds of waiting requests, estimated at routing
        self.todo_tokens = 0  # prompt tokens admitted and not yet computed
        self.per_token_s = profile.flops_per_token / profile.flops_per_s  # prefill seconds per token
        self.evict_at = math.inf  # when the run under way next pushes tokens out of the tree (see sync)
        self.last_routed = -1
        # The step or run of decode steps under way (end_s None: idle):
        self.t0 = 0.0
        self.run_steps = 0  # decode-only steps in the run; 0 for a prefill step
        self.run_kv = 0  # context tokens the run's first step reads
        self.chunks: list[tuple[Seq, int]] = []  # a prefill step's (sequence, prompt tokens)
        self.with_decodes = False  # whether the decodes make a token in this prefill step
        self.end_s: float | None = None
        self.epoch = 0  # bumped by every plan and cut: an event carrying an older one is stale and ignored
        self.busy: list[list[float]] = []  # [start, end] spans of steps, merged when they touch
        self.busy_s = 0.0
        self.prefill_compute_s = 0.0  # prefill compute: prompt tokens computed × seconds per token
        self.stalls = Stalls()
        self.order = itertools.count()  # breaks ties between sequences ending at the same step: first joined first
        self.on_first: Callable[[Seq], None] | None = None  # called with each sequence at its first token, if set
        self.token_steps: list[float] | None = None  # if a list: the end of every step that made decode tokens
        self.role = "both"  # "both" (co-located), "prefill" (hands each prompt on) or "decode" (takes them)
        self.on_handoff: Callable[[Seq, float], None] | None = None  # a prefill replica's: called at each first token
        self.guard_s: float | None = None  # longest_prefix_first's starvation guard (None: first come first served)

    # -- what the router and the charts see ---------------------------------
    def backlog(self, now: float) -> float:
        """Prefill seconds ahead of a request routed here now: waiting prompts and the rest of those under way."""
        return self.queued_work_s + self.todo_tokens * self.per_token_s

    @staticmethod
    def backlogs(replicas: "Sequence[ServingReplica]", now: float) -> list[float]:
        """`backlog(now)` of each of `replicas`, in one pass: routers ask for the whole fleet's on every request."""
        return [r.queued_work_s + r.todo_tokens * r.per_token_s for r in replicas]

    def in_flight(self) -> int:
        """Requests routed here and not finished: waiting, prefilling or decoding."""
        return len(self.waiting) + len(self.prefilling) + len(self.finishing)

    def prefill_s(self, uncached_tokens: int) -> float:
        """Seconds of prefill for `uncached_tokens`, as the profile prices them."""
        return self.profile.prefill_s(uncached_tokens)

    def private_tokens(self, now: float) -> int:
        """KV tokens running sequences hold outside the tree at `now` (a token counts from its step's end)."""
        steps = self.steps
        if self.run_steps and self.end_s is not None:
            steps += self.profile.decode_steps_within(now - self.t0, self.n_dec, self.run_kv)
        return self.private_prompt + self.gen_base + self.n_dec * steps

    def sync(self, now: float) -> None:
        """Evict what the tokens generated by `now` push out of the tree.

        Inside a run of decode steps evictions are lazy: nothing else touches the tree until the
        run ends, and evicting LRU leaves for k tokens and then for k' more frees the same leaves
        as evicting for k + k' at once, so the tree is as if evicted step by step whenever it is read.
        """
        if now >= self.evict_at:
            self._fit(self.private_tokens(now))
            self._next_eviction()

    def _next_eviction(self) -> None:
        """When, in the run under way, the tokens generated next outgrow what the tree leaves free."""
        self.evict_at = math.inf
        if self.run_steps and self.cache:
            base = self.private_prompt + self.gen_base + self.n_dec * self.steps  # at the run's start
            steps = (self.budget - self.tree.total_tokens - base) // self.n_dec + 1  # first step over budget
            if steps <= self.run_steps:
                self.evict_at = self.t0 + self.profile.decode_steps_s(steps, self.n_dec, self.run_kv)

    def kv_split(self, now: float) -> tuple[int, int]:
        """(running, cached) KV tokens at `now`: what running sequences use (their tokens outside the tree and
        the tree nodes they lock) and what the prefix cache holds besides; together at most the budget."""
        self.sync(now)
        locked = self.tree.locked_tokens
        return self.private_tokens(now) + locked, self.tree.total_tokens - locked

    def check(self, now: float) -> None:
        """Raise AssertionError unless running + cached tokens fit the budget and the tree is sound."""
        self.sync(now)
        assert self.private_tokens(now) + self.tree.total_tokens <= self.budget
        assert self.tree.locked_tokens + self.hold <= self.budget
        self.tree.check_invariants()

    # -- arrivals -------------------------------------------------------------
    def enqueue(self, request: Request, now: float, matched: int) -> Seq | None:
        """Accept a routed request whose tree match is `matched` tokens now; None if it can never fit."""
        self.last_routed = request.id
        if request.prompt_tokens + request.answer_tokens + 1 > self.budget:  # +1: a prompt all cached recomputes one
            return None
        seq = Seq(request, self.index, self.profile.prefill_s(request.prompt_tokens - matched, matched))
        first = not self.waiting
        self.waiting.append(seq)
        self.queued_work_s += seq.estimate_s
        self._wake(now, first)
        return seq

    def hand_in(self, seq: Seq) -> None:
        """A decode replica takes a sequence whose prompt another replica computed (its KV has arrived)."""
        first = not self.waiting
        self.waiting.append(seq)
        self._wake(self.loop.now, first)

    def _wake(self, now: float, first: bool) -> None:
        """Start the replica if idle, or cut its run of decode steps short so a new arrival can join."""
        if self.end_s is None:  # idle: start once every request arriving at this instant is queued
            self.end_s, self.epoch = now, self.epoch + 1
            self.loop.at(now, START, self._start, self.epoch)
        elif first and self.run_steps and self.n_dec + len(self.prefilling) < self.max_running:
            self._cut(now)

    def _cut(self, now: float) -> None:
        """End the run of decode steps at the step boundary after `now`, so the next step can admit."""
        steps = self.profile.decode_steps_within(now - self.t0, self.n_dec, self.run_kv) + 1
        if steps < self.run_steps:
            self.run_steps = steps
            self.end_s = max(now, self.t0 + self.profile.decode_steps_s(steps, self.n_dec, self.run_kv))
            self.epoch += 1
            self.loop.at(self.end_s, STEP, self._step_end, self.epoch)

    def _start(self, epoch: int) -> None:
        if epoch == self.epoch:
            self._plan(self.loop.now)

    # -- the scheduling rule ----------------------------------------------------
    def _plan(self, now: float) -> None:
        """Choose the next step at `now` and schedule its end; idle if there is nothing to do."""
        budget = self.token_budget
        chunks: list[tuple[Seq, int]] = []
        if self.chunked:  # running first: a token per decode, then prefills under way, then new ones
            budget -= self.n_dec
            for seq in self.prefilling:
                if budget <= 0:
                    break
                take = min(seq.todo, budget)
                chunks.append((seq, take))
                budget -= take
        if self.waiting:
            self._admit(now, budget, chunks)
        self.with_decodes = self.n_dec > 0 and (self.chunked or not chunks)
        self.t0, self.chunks, self.epoch, self.evict_at = now, chunks, self.epoch + 1, math.inf
        kv = self.ctx_base + self.n_dec * self.steps
        if chunks:
            tokens = sum(take for _, take in chunks)
            done = [(take, seq.request.prompt_tokens - seq.todo) for seq, take in chunks]  # (new, before them)
            read = sum(before for _, before in done) + (kv if self.with_decodes else 0)
            decodes = self.n_dec if self.with_decodes else 0
            self.run_steps, self.end_s = 0, now + self.profile.step_s(tokens, read, done, decodes)
        elif self.n_dec:
            self.run_steps, self.run_kv = self.finishing[0][0] - self.steps, kv
            self.end_s = now + self.profile.decode_steps_s(self.run_steps, self.n_dec, kv)
            self._next_eviction()
        else:
            self.run_steps, self.end_s = 0, None
            return
        self.loop.at(self.end_s, STEP, self._step_end, self.epoch)

    def _admit(self, now: float, budget: int, chunks: list[tuple[Seq, int]]) -> None:
        """Admit waiting requests in order while the budget, `max_running` and memory allow."""
        if self.guard_s is not None and len(self.waiting) > 1:
            self._longest_prefix_first(now)
        tree, waiting = self.tree, self.waiting
        while waiting and budget > 0 and self.n_dec + len(self.prefilling) < self.max_running:
            seq = waiting[0]
            r = seq.request
            if self.role == "decode":  # its prompt's KV arrived: into the tree (a prefix held already is shared)
                self._admit_decode(seq)
                if seq.lock is None:
                    return  # it waits for memory, and the ones behind it too
                budget -= 1
                continue
            lock, _, matched = tree.find(r.keys) if self.cache else (tree.root, 0, 0)
            tree.lock(lock)  # the root, with the cache off: no-op
            todo = max(1, r.prompt_tokens - matched)  # the last prompt token is always computed
            if (not self.chunked and chunks and todo > budget) or \
                    tree.locked_tokens + self.hold + todo + r.answer_tokens > self.budget:
                tree.unlock(lock)
                return  # it waits, and the ones behind it too: first come first served
            waiting.popleft()
            self.queued_work_s = self.queued_work_s - seq.estimate_s if waiting else 0.0
            seq.lock, seq.cached_tokens, seq.todo, seq.uncached = lock, r.prompt_tokens - todo, todo, todo
            seq.admitted_s = now
            self.hold += todo + r.answer_tokens
            self.private_prompt += todo
            self.todo_tokens += todo
            self._fit(self.private_prompt + self.gen_base + self.n_dec * self.steps)  # room for its prompt's KV
            self.prefilling.append(seq)
            take = min(todo, budget) if self.chunked else todo
            chunks.append((seq, take))
            budget -= take

    def _longest_prefix_first(self, now: float) -> None:
        """Reorder the queue (after SGLang's longest-prefix-first): requests that have waited `guard_s` or more
        first, in arrival order; then the rest by the most tokens the tree holds of their prompt now, ties
        in arrival order. The head still blocks the rest, so no request that came later is admitted before
        one that has waited out the guard."""
        waiting = sorted(self.waiting, key=lambda s: s.request.id)  # ids are given in arrival order
        overdue = [s for s in waiting if now - s.request.arrival_s >= self.guard_s]  # type: ignore[operator]
        rest = [s for s in waiting if now - s.request.arrival_s < self.guard_s]  # type: ignore[operator]
        peek = self.tree.peek
        rest.sort(key=lambda s: -peek(s.request.keys))  # a stable sort: equal matches keep arrival order
        self.waiting = deque(overdue + rest)

    def _admit_decode(self, seq: Seq) -> None:
        """A decode replica admits a handed-over sequence if memory allows (`seq.lock` set), as if its prompt
        had just been computed here: the prompt joins the tree, locked while it runs, and it starts decoding."""
        tree, r = self.tree, seq.request
        lock, _, matched = tree.find(r.keys) if self.cache else (tree.root, 0, 0)
        tree.lock(lock)
        new = r.prompt_tokens - matched
        if tree.locked_tokens + self.hold + new + r.answer_tokens > self.budget:
            tree.unlock(lock)
            return
        self.waiting.popleft()
        seq.lock, seq.uncached = lock, new
        self.hold += r.answer_tokens
        if self.cache:
            self._fit(self.private_prompt + self.gen_base + self.n_dec * self.steps)
            node, _ = tree.insert(r.keys, r.sizes)
            tree.lock(node)
            tree.unlock(lock)
            seq.lock = node
        else:
            self.hold += new
            self.private_prompt += new
        self._decode(seq)

    # -- step ends ----------------------------------------------------------------
    def _step_end(self, epoch: int) -> None:
        if epoch != self.epoch:
            return  # this run was cut short; its new end is scheduled
        now = self.loop.now
        self._busy(self.t0, now)
        if self.run_steps:
            n, batch, kv, profile = self.run_steps, self.n_dec, self.run_kv, self.profile
            tail = profile.decode_step_s(kv + batch * (n - 1), batch) if n > 1 else 0.0  # the last step reads the most
            self.stalls.add(self.t0 + profile.decode_step_s(kv, batch), tail, now)
            self.steps += n
            if self.token_steps is not None:
                self.token_steps += [self.t0 + profile.decode_steps_s(k, batch, kv) for k in range(1, n + 1)]
        else:
            if self.with_decodes:
                self.stalls.add(now, 0.0, now)
                self.steps += 1
                if self.token_steps is not None:
                    self.token_steps.append(now)
            self._fit(self.private_prompt + self.gen_base + self.n_dec * self.steps)
            for seq, take in self.chunks:
                seq.todo -= take
                self.todo_tokens -= take
                self.prefill_compute_s += take * self.per_token_s
                if not seq.todo:
                    self._prompt_done(seq, now)
            self.chunks = []
        self._fit(self.private_prompt + self.gen_base + self.n_dec * self.steps)
        finishing = self.finishing
        while finishing and finishing[0][0] <= self.steps:
            self._answer_done(heapq.heappop(finishing)[2], now)
        self._plan(now)

    def _prompt_done(self, seq: Seq, now: float) -> None:
        """The prompt is computed: its first token is out; put the prompt in the tree and start decoding."""
        r = seq.request
        seq.first_token_s = now
        self.prefilling.remove(seq)
        if self.cache:  # the prompt moves from running memory into the tree, locked while it runs
            self.private_prompt -= seq.uncached
            self.hold -= seq.uncached
            self._fit(self.private_prompt + self.gen_base + self.n_dec * self.steps)
            node, _ = self.tree.insert(r.keys, r.sizes)
            self.tree.lock(node)
            self.tree.unlock(seq.lock)  # type: ignore[arg-type]
            seq.lock = node
        if self.on_first is not None:
            self.on_first(seq)
        if r.answer_tokens == 1:
            self._answer_done(seq, now, decoding=False)
            return
        if self.on_handoff is not None:  # a prefill replica: free what it held and send the KV on
            self.hold -= r.answer_tokens
            self.tree.unlock(seq.lock)  # type: ignore[arg-type]
            if not self.cache:
                self.private_prompt -= seq.uncached
                self.hold -= seq.uncached
            seq.lock = None
            self.on_handoff(seq, now)
            return
        self._decode(seq)

    def _decode(self, seq: Seq) -> None:
        """The sequence makes a token in every step from the next one on, until its answer is out."""
        r = seq.request
        seq.join, seq.segment = self.steps, len(self.stalls.first_end)
        self.n_dec += 1
        self.ctx_base += r.prompt_tokens + 1 - seq.join
        self.gen_base += 1 - seq.join
        heapq.heappush(self.finishing, (seq.join + r.answer_tokens - 1, next(self.order), seq))

    def _answer_done(self, seq: Seq, now: float, decoding: bool = True) -> None:
        """The last token is out: cache the prompt and answer, free what the sequence held."""
        r = seq.request
        seq.done_s = now
        if decoding:
            seq.stall_s = self.stalls.longest(seq.segment, seq.first_token_s)
            self.n_dec -= 1
            self.ctx_base -= r.prompt_tokens + 1 - seq.join
            self.gen_base -= 1 - seq.join
        self.hold -= r.answer_tokens
        if self.cache:
            self._fit(self.private_prompt + self.gen_base + self.n_dec * self.steps)
            if r.answer_key is None:  # a replayed trace: no later prompt could match a key made up for the answer
                self.tree.insert(r.keys, r.sizes)
            else:
                self.tree.insert(r.keys + (r.answer_key,), r.sizes + (r.answer_tokens,))
        self.tree.unlock(seq.lock)  # type: ignore[arg-type]
        if not self.cache:
            self.private_prompt -= seq.uncached
            self.hold -= seq.uncached
        seq.lock = None
        self.on_done(seq)

    # -- memory and time ------------------------------------------------------------
    def _fit(self, running: int) -> None:
        """Give the tree what `running` tokens leave of the budget, evicting LRU leaves if it holds more."""
        if not self.cache:
            return
        tree = self.tree
        tree.capacity = self.budget - running
        if tree.total_tokens > tree.capacity:
            tree.evict(tree.total_tokens - tree.capacity)
            if tree.total_tokens > tree.capacity:
                raise RuntimeError(f"replica {self.index}: running sequences need more KV than the budget holds")

    def _busy(self, start: float, end: float) -> None:
        self.busy_s += end - start
        if self.busy and self.busy[-1][1] == start:
            self.busy[-1][1] = end
        else:
            self.busy.append([start, end])
