"""Seeded synthetic chat traffic: sessions, turns and the prompts they send.

Sessions arrive as a Poisson process whose rate is `traffic.session_rate`
times the factor of every burst active at that moment. Each session picks a
system prompt (Zipf-skewed over `system_prompts`, or `surge_system_prompts`
while a tenant surge is on), then sends a geometric number of turns (mean
`turns_mean`, at least one) spaced uniformly `gap_min_s`..`gap_max_s` apart.
Turns that would arrive after `duration_s` are not sent. That is lab
mode's open-loop schedule (`generate`); serving mode sends the same
`sessions()` closed-loop, all their turns (`sessions.ChatSessions`).

A prompt is a list of segments, each a hashable key and its token count:
the system prompt cut at `dynamic_at` tokens, every earlier user turn and
answer of the session, and the new user turn. Dynamic text (a per-request
timestamp, a key no other request shares) goes at the cut (`top`) or at the
end (`bottom`); after a `timestamp` event every request puts it at the top.

Randomness: one `random.Random` per purpose, seeded from the scenario seed
and a label, so nothing about the fleet or the router can change the traffic.
Session n draws its whole content (prompt pick, turns, gaps) from the
`sessions` stream before the window cuts it, so its content does not depend
on when it arrives: a burst moves arrivals, not what is said.
"""

import math
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate
from typing import NamedTuple

from model.config import Scenario, Traffic
from model.rng import stream

__all__ = ["Request", "Session", "TooManyRequests", "generate", "sessions", "traffic_key"]


class TooManyRequests(Exception):
    """A scenario sends more requests than the caller's limit; raised as soon as the count passes it."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"this setup sends more than {limit:,} requests")
        self.limit = limit


class Request(NamedTuple):
    """One prompt sent to the fleet. `id` is its place in arrival order.

    A NamedTuple rather than a frozen dataclass: a run makes thousands, and
    the simulation's speed budget is tight (it re-runs as a slider moves).
    """

    id: int
    arrival_s: float
    session: int
    turn: int  # 0 for a session's first turn
    system_prompt: int
    keys: tuple  # prompt segments, in prompt order
    sizes: tuple[int, ...]  # tokens of each segment
    user_tokens: int  # the new user turn only
    answer_tokens: int
    answer_key: tuple | None  # the segment the answer adds after the prompt; None: the answer is not cached
    prompt_tokens: int  # sum(sizes)
    cacheable_tokens: int  # tokens before the first segment new in this request: no tree can hold more
    affinity: str  # what affinity routers (consistent hashing) hash: for chat, the system prompt


def generate(scenario: Scenario, limit: int | None = None) -> list[Request]:
    """Every request of the scenario, in arrival order.

    With a `limit`, stop with `TooManyRequests` as soon as more than `limit`
    sessions or requests have been drawn: the work done is bounded by the
    count, not by an estimate (overlapping bursts multiply the rate).
    """
    t = scenario.traffic
    timestamps = [e.at_s for e in scenario.events_of("timestamp")]
    first_timestamp = min(timestamps, default=math.inf)
    raw = []  # (arrival, session, turn, system prompt, user, answer)
    for drawn in sessions(scenario, limit):
        at = drawn.start_s
        for turn, (user, answer, gap) in enumerate(drawn.turns):
            if at >= scenario.duration_s:
                break
            raw.append((at, drawn.id, turn, drawn.system_prompt, user, answer))
            at += gap
        if limit is not None and len(raw) > limit:
            raise TooManyRequests(limit)
    raw.sort()

    history: dict[int, tuple[tuple, tuple, int]] = {}  # session -> (keys, sizes, tokens) of its earlier turns
    plain_heads: dict[int, tuple[tuple, tuple]] = {}  # system prompt -> its segments, no dynamic text
    affinities: dict[int, str] = {}  # system prompt -> its affinity text
    requests = []
    make = tuple.__new__  # Request(...) without its Python-level __new__: a run makes thousands
    dynamic_text, system_tokens, dynamic_tokens = scenario.dynamic_text, t.system_tokens, t.dynamic_tokens
    for rid, (at, session, turn, prompt, user, answer) in enumerate(raw):
        mode = "top" if at >= first_timestamp else dynamic_text
        past_keys, past_sizes, past_tokens = history.get(session, ((), (), 0))
        user_key, answer_key = ("user", session, turn), ("answer", session, turn)
        if mode == "top":
            head_keys, head_sizes = _system_segments(prompt, t, ("dyn", rid))
            cacheable = t.dynamic_at  # nothing after the timestamp can match
        else:
            head = plain_heads.get(prompt)
            if head is None:
                head = plain_heads[prompt] = _system_segments(prompt, t, None)
            head_keys, head_sizes = head
            cacheable = system_tokens + past_tokens
        keys = head_keys + past_keys + (user_key,)
        sizes = head_sizes + past_sizes + (user,)
        if mode == "bottom":
            keys, sizes = keys + (("dyn", rid),), sizes + (dynamic_tokens,)
        prompt_tokens = system_tokens + past_tokens + user + (dynamic_tokens if mode != "none" else 0)
        history[session] = (past_keys + (user_key, answer_key), past_sizes + (user, answer), past_tokens + user + answer)
        affinity = affinities.get(prompt)
        if affinity is None:
            affinity = affinities[prompt] = f"prompt/{prompt}"
        requests.append(make(Request, (rid, at, session, turn, prompt, keys, sizes, user, answer, answer_key,
                                       prompt_tokens, cacheable, affinity)))
    return requests


def traffic_key(scenario: Scenario) -> tuple:
    """Everything of `scenario` that `generate` and `sessions` read, hashable: equal keys, equal traffic.

    The fleet, the router and the explainers' keys play no part, so a caller may keep one scenario's
    requests (they are tuples) for another with the same key.
    """
    return (scenario.seed, scenario.duration_s, scenario.dynamic_text, scenario.traffic, scenario.events)


class Session(NamedTuple):
    """One chat session as drawn, before any window or fleet decides when its turns are sent."""

    id: int  # its place in start order
    start_s: float
    system_prompt: int
    turns: tuple[tuple[int, int, float], ...]  # (user tokens, answer tokens, gap before the next turn)


def sessions(scenario: Scenario, limit: int | None = None) -> Iterator[Session]:
    """Every session starting inside the window, with all its turns, in start order.

    Session n draws its whole content (prompt pick, turns, gaps) from the
    `sessions` stream, whatever cuts it later. Past `limit` sessions, stops
    with `TooManyRequests`.
    """
    t = scenario.traffic
    surges = [(e.at_s, e.ends_s()) for e in scenario.events_of("surge")]
    normal_cum = _zipf_cumulative(t.system_prompts, t.zipf_s)
    surge_cum = _zipf_cumulative(t.surge_system_prompts, t.zipf_s)
    p_next = 1.0 - 1.0 / t.turns_mean  # chance that a session sends one more turn
    answer_lo, answer_hi = t.answer_mean - t.answer_mean // 2, t.answer_mean + t.answer_mean // 2
    random_ = stream(scenario.seed, "sessions").random
    user_span, answer_span = t.user_max - t.user_min + 1, answer_hi - answer_lo + 1
    gap_span = t.gap_max_s - t.gap_min_s
    for session, start in enumerate(_session_starts(scenario, limit)):
        # Draws inline from rng.random(): randint and uniform cost a Python call each, and
        # this loop is a fifth of a run. int(lo + u * n) is uniform over lo..lo+n-1.
        pick = random_()
        turns = []
        while True:
            turns.append((int(t.user_min + random_() * user_span), int(answer_lo + random_() * answer_span),
                          t.gap_min_s + random_() * gap_span))
            if random_() >= p_next:
                break
        surging = surges and any(a <= start < b for a, b in surges)  # most setups have no surge
        cum = surge_cum if surging else normal_cum
        yield Session(session, start, bisect_left(cum, pick * cum[-1]), tuple(turns))


def _system_segments(prompt: int, t: Traffic, dynamic: tuple | None) -> tuple[tuple, tuple]:
    """The system prompt's segments, cut at `dynamic_at` tokens, with dynamic text in the cut if given.

    With a template (`template_tokens`), the prompt's first tokens are one segment every system prompt shares
    (two, if the cut falls inside it), so caches and text-matching routers both find it in any of them.
    """
    if t.template_tokens:
        return _templated_segments(prompt, t, dynamic)
    keys, sizes = [("sys", prompt, 0), ("sys", prompt, 1)], [t.dynamic_at, t.system_tokens - t.dynamic_at]
    if dynamic is not None:
        keys.insert(1, dynamic)
        sizes.insert(1, t.dynamic_tokens)
    kept = [i for i, n in enumerate(sizes) if n > 0]  # a cut at 0 or at the end leaves an empty piece
    return tuple(keys[i] for i in kept), tuple(sizes[i] for i in kept)


def _templated_segments(prompt: int, t: Traffic, dynamic: tuple | None) -> tuple[tuple, tuple]:
    """`_system_segments` with a shared template: pieces between the cuts at the template's end and `dynamic_at`."""
    cuts = sorted({0, t.template_tokens, t.dynamic_at, t.system_tokens})
    keys: list[tuple] = []
    sizes: list[int] = []
    for a, b in zip(cuts, cuts[1:]):
        if a == t.dynamic_at and dynamic is not None:
            keys.append(dynamic)
            sizes.append(t.dynamic_tokens)
        keys.append(("template", a) if a < t.template_tokens else ("sys", prompt, a))
        sizes.append(b - a)
    if t.dynamic_at == t.system_tokens and dynamic is not None:
        keys.append(dynamic)
        sizes.append(t.dynamic_tokens)
    return tuple(keys), tuple(sizes)


def _zipf_cumulative(n: int, s: float) -> list[float]:
    return list(accumulate(1.0 / (k ** s) for k in range(1, n + 1)))


def _session_starts(scenario: Scenario, limit: int | None = None, rate: float | None = None,
                    label: str = "arrivals") -> list[float]:
    """Poisson arrival times over [0, duration_s), with bursts multiplying the rate.

    Unit-rate exponential gaps are mapped through the inverse of the cumulative
    rate (time rescaling), so a burst changes arrivals only from its start on.
    `rate` (default `traffic.session_rate`) and the stream's `label` let another
    request source (agent runs) draw its own starts the same way.
    """
    end = scenario.duration_s
    bursts = scenario.events_of("burst")
    cuts = sorted({0.0, end, *(min(b.at_s, end) for b in bursts), *(min(b.ends_s(), end) for b in bursts)})
    pieces = []  # (start, stop, rate) with constant rate inside
    base = scenario.traffic.session_rate if rate is None else rate
    for a, b in zip(cuts, cuts[1:]):
        rate = base
        for burst in bursts:
            if burst.at_s <= a < burst.ends_s():
                rate *= burst.factor
        pieces.append((a, b, rate))

    rng = stream(scenario.seed, label)
    starts, piece, budget = [], 0, rng.expovariate(1.0)
    now = 0.0
    while piece < len(pieces):
        a, b, rate = pieces[piece]
        room = (b - now) * rate  # unit-rate time left in this piece
        if budget < room:
            now += budget / rate
            starts.append(now)
            if limit is not None and len(starts) > limit:  # every session sends at least one request
                raise TooManyRequests(limit)
            budget = rng.expovariate(1.0)
        else:
            budget -= room
            now = b
            piece += 1
    return starts
