"""One replica: a first-come-first-served prefill queue over its own prefix cache.

Prefill time = `overhead_ms` + tokens its tree does not hold / prefill speed.
A routed request locks the prefix it matched, so that prefix stays while the
request waits. A request that waited starts right after the one before it
finished and cached its prompt, so the replica matches it again then and
moves the lock; one that starts as it is routed keeps the match it has.
When prefill ends, the replica caches the prompt and its answer (a replayed
trace's request has no answer key: its prompt only) and releases the lock.
With the cache off, nothing matches and nothing is cached.

Fetching (`fleet.fetch`, off by default): the engine gives each replica a
`fetcher` that says how much of a prompt beyond its own match it would move
from a peer, and in how many seconds (`explainers.fetch_plan`). A request's
time is then the fetch plus prefill of what is still missing; the fetched
prefix is cached with the prompt when prefill ends, like any computed one.

`backlog(now)` is the router's view of load: seconds of work queued and
running, with queued work estimated from the match at routing time.

A measured GPU preset (`model/gpus/gpu.py`) gives the replica its `timing`
instead, (uncached tokens, tokens before them) -> seconds of one pass; the
lab's own preset keeps the formula above, written out where it is used.
"""

from collections import deque
from collections.abc import Callable, Sequence

from model.holders import FirstKeys
from model.radix import Node, RadixTree
from model.sources.traffic import Request

__all__ = ["Replica", "Served"]


class Served:
    """What happened to one request on its replica (filled in as it goes)."""

    __slots__ = ("request", "replica", "lock", "lock_keys", "estimate_s", "start_s", "prefill_s", "cached_tokens",
                 "held_elsewhere", "waited", "fetched_tokens", "fetch_s")

    def __init__(self, request: Request, replica: int, lock: Node | None, matched: int, estimate_s: float,
                 waited: bool, lock_keys: int = 0) -> None:
        self.request = request
        self.replica = replica
        self.lock = lock  # node locked for this request, None with the cache off
        self.lock_keys = lock_keys  # the lock ends at the prompt's first lock_keys keys (the insert starts there)
        self.estimate_s = estimate_s  # prefill time expected at routing
        self.start_s = 0.0
        self.prefill_s = 0.0
        self.cached_tokens = matched  # at routing; matched again when prefill starts
        self.held_elsewhere = 0  # most tokens another replica held at routing (set by the engine)
        self.waited = waited  # queued behind another request: its tree will have changed by its start
        self.fetched_tokens = 0  # moved from a peer when prefill started (fleet.fetch)
        self.fetch_s = 0.0  # seconds that took, part of prefill_s


class Replica:
    """A replica's queue, cache and running totals."""

    __slots__ = ("index", "tree", "cache", "overhead_s", "tokens_per_s", "queue", "running",
                 "busy_until", "queued_work_s", "busy_s", "last_routed", "fetcher", "timing")

    def __init__(self, index: int, capacity_tokens: int, cache: bool, overhead_s: float,
                 tokens_per_s: float, timing: Callable[[int, int], float] | None = None,
                 heads: FirstKeys | None = None) -> None:
        self.index = index
        self.tree = RadixTree(capacity_tokens if cache else 0, None, heads, 1 << index)  # heads: the fleet's index
        self.cache = cache
        self.overhead_s = overhead_s
        self.tokens_per_s = tokens_per_s
        self.queue: deque[Served] = deque()
        self.running: Served | None = None
        self.busy_until = 0.0
        self.queued_work_s = 0.0  # sum of estimate_s over the queue
        self.busy_s = 0.0
        self.last_routed = -1  # id of the last request routed here (for tie-breaks)
        # (replica, request, tokens matched here) -> (tokens to fetch from a peer, seconds); None: no fetching
        self.fetcher: Callable[[Replica, Request, int], tuple[int, float]] | None = None
        self.timing = timing  # a measured GPU's (uncached, tokens before them) -> seconds; None: the formula

    def backlog(self, now: float) -> float:
        """Seconds of work ahead of a request routed here now."""
        ahead = self.busy_until - now
        return (ahead if ahead > 0.0 else 0.0) + self.queued_work_s  # max(0.0, ahead) without a call: routers ask often

    @staticmethod
    def backlogs(replicas: "Sequence[Replica]", now: float) -> list[float]:
        """`backlog(now)` of each of `replicas`, in one pass: routers ask for the whole fleet's on every request."""
        return [(ahead if (ahead := r.busy_until - now) > 0.0 else 0.0) + r.queued_work_s for r in replicas]

    def in_flight(self) -> int:
        """Requests queued or running here."""
        return len(self.queue) + (self.running is not None)

    def prefill_s(self, uncached_tokens: int, context: int = 0) -> float:
        if self.timing is not None:
            return self.timing(uncached_tokens, context)
        return self.overhead_s + uncached_tokens / self.tokens_per_s

    def _look_up(self, request: Request) -> tuple[Node | None, int, int, float]:
        """A routed request's cached prefix, locked: (lock, the keys it ends at, tokens matched, prefill seconds
        of the rest), and the request noted as the last routed here."""
        self.last_routed = request.id
        lock, at, matched = None, 0, 0
        if self.cache:
            lock, at, matched = self.tree.find_locked(request.keys)
        if self.timing is None:  # prefill_s(), inline
            return lock, at, matched, self.overhead_s + (request.prompt_tokens - matched) / self.tokens_per_s
        return lock, at, matched, self.timing(request.prompt_tokens - matched, matched)

    def enqueue(self, request: Request) -> Served:
        """Accept a routed request: lock its cached prefix and queue it."""
        lock, at, matched, estimate = self._look_up(request)
        if self.fetcher is not None:
            tokens, seconds = self.fetcher(self, request, matched)
            estimate = self.prefill_s(request.prompt_tokens - matched - tokens, matched + tokens) + seconds
        served = Served(request, self.index, lock, matched, estimate, self.running is not None, at)
        self.queue.append(served)
        self.queued_work_s += served.estimate_s
        return served

    def start_now(self, request: Request, now: float) -> Served:
        """`enqueue(request)` then `start_next(now)` on an idle replica (nothing running, nothing queued), in one
        step: its prefill is the time enqueue estimated (the same match, the same formula), and the queue's work
        is back to 0.0 as start_next leaves it."""
        if self.running is not None or self.queue:
            raise RuntimeError(f"start_now() on replica {self.index}, which is not idle")
        if self.fetcher is not None:  # a fetch is planned again at the start
            self.enqueue(request)
            return self.start_next(now)
        lock, at, matched, seconds = self._look_up(request)
        served = Served(request, self.index, lock, matched, seconds, False, at)
        served.start_s = now
        served.prefill_s = seconds
        self.busy_until = now + seconds
        self.busy_s += seconds
        self.running = served
        return served

    def start_next(self, now: float) -> Served:
        """Start prefill of the oldest queued request; returns it with its times set."""
        served = self.queue.popleft()
        self.queued_work_s -= served.estimate_s
        if not self.queue:
            self.queued_work_s = 0.0  # no float residue on an empty queue
        if self.cache and served.waited:  # the tree grew while it waited: match again, move the lock
            old = served.lock
            served.lock, served.lock_keys, served.cached_tokens = self.tree.find_locked(served.request.keys)
            self.tree.unlock(old)  # type: ignore[arg-type]
        served.start_s = now
        cached = served.cached_tokens
        if self.timing is None:
            served.prefill_s = self.overhead_s + (served.request.prompt_tokens - cached) / self.tokens_per_s
        else:
            served.prefill_s = self.timing(served.request.prompt_tokens - cached, cached)
        if self.fetcher is not None:
            served.fetched_tokens, served.fetch_s = self.fetcher(self, served.request, cached)
            missing = served.request.prompt_tokens - cached - served.fetched_tokens
            served.prefill_s = self.prefill_s(missing, cached + served.fetched_tokens) + served.fetch_s
        self.busy_until = now + served.prefill_s
        self.busy_s += served.prefill_s
        self.running = served
        return served

    def finish(self) -> Served:
        """End the running prefill: cache its prompt and answer, release its lock."""
        served = self.running
        assert served is not None, "finish() with nothing running"
        self.running = None
        if self.cache:
            r, lock, at = served.request, served.lock, served.lock_keys  # the lock still ends where find left it
            if r.answer_key is None:  # a replayed trace: no later prompt could match a key made up for the answer
                self.tree.insert_unlocking(r.keys, r.sizes, lock, at)  # type: ignore[arg-type]
            else:
                self.tree.insert_unlocking(r.keys + (r.answer_key,), r.sizes + (r.answer_tokens,), lock, at)  # type: ignore[arg-type]
            served.lock = None
        return served
