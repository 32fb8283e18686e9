"""A closed population of users: each sends its next request only once its last answer is out.

`traffic.users` users hold conversations. User u starts at u x ramp_s /
users (evenly over `traffic.ramp_s`), and from then on sends a request,
waits for its answer, thinks (`traffic.think_s` on average, uniform from
half to one and a half times; 0 sends at once), and sends the next, until
the window (`duration_s`) ends: a user whose next send would fall after it
stops. The load is whatever the users can send; nothing arrives open-loop.

A conversation's first prompt is the shared prefix (a system prompt of
`traffic.prefix_tokens`, the same for every user) and a tail of new text:
    tail = prefix_tokens x (1 - sharing_ratio) / sharing_ratio  (at least 1)
so the prefix is `sharing_ratio` of that prompt (4,000 and 444 at 90%).
Every later prompt repeats the previous prompt and its answer, then adds a
new tail of the same size, so its prefix (all but the tail) is exactly what
the user's previous request sent and got back. When the next prompt and
its answer would pass `traffic.context_tokens` (a model's context window),
the user starts a new conversation from the shared prefix. Answers are
`traffic.answer_mean` tokens on average (uniform, half to one and a half
times, as chat's).

Modes: in serving mode a request's answer is out at its last token; in lab
mode, which has no decode, when its prefill ends (as agent runs there).

Randomness: each user draws its answers from its own stream
(`closed-answers/<user>`) and its thinking times from another
(`closed-think/<user>`), so the n-th answer of user u is the same whatever
the fleet or the router: they change when requests are sent, never what
they say. Segments are keyed by user, conversation and request, so no two
users share anything but the system prompt. A request's `session` is its
user and its `turn` its place in the conversation (0: the first, which
repeats nothing of its own). Affinity routers hash the conversation
(`conversation/<user>/<n>`).
"""

import random
from collections.abc import Callable

from model.config import Scenario, closed_tail
from model.loop import ARRIVE, EventLoop
from model.rng import stream
from model.sources.agents import AgentRuns
from model.sources.traffic import Request, TooManyRequests

__all__ = ["ClosedUsers", "looped_source"]

SYSTEM_KEY = ("sys", "closed")  # the one system prompt every conversation starts with


class ClosedUsers:
    """A request source of `traffic.users` users, each waiting for its answer before it sends again.

    The engine `attach`es its event loop and routing function and tells the source of every
    answer (`answered`; `first_token` is accepted and ignored); the source sends at ARRIVE
    priority and numbers requests as it sends them. Past `limit` requests, `TooManyRequests`.
    """

    __slots__ = ("scenario", "limit", "tail", "answers", "thinks", "sent", "loop", "route", "state")

    def __init__(self, scenario: Scenario, limit: int | None = None) -> None:
        t = scenario.traffic
        self.scenario = scenario
        self.limit = limit
        self.tail = closed_tail(t)
        users = range(t.users)
        self.answers: list[random.Random] = [stream(scenario.seed, f"closed-answers/{u}") for u in users]
        self.thinks: list[random.Random] = [stream(scenario.seed, f"closed-think/{u}") for u in users]
        self.sent: list[Request] = []  # every request sent so far, in send order (its id is its index)
        self.loop: EventLoop | None = None
        self.route: Callable[[Request], None] | None = None
        # user -> (its conversation's number, requests in it so far, keys and sizes the next prompt repeats)
        self.state: list[tuple[int, int, tuple, tuple]] = [(-1, 0, (), ()) for _ in users]

    def attach(self, loop: EventLoop, route: Callable[[Request], None]) -> None:
        """Start sending on `loop`; each request built is handed to `route` at its send time."""
        self.loop, self.route = loop, route
        t = self.scenario.traffic
        for u in range(t.users):
            at = u * t.ramp_s / t.users
            if at < self.scenario.duration_s:
                loop.at(at, ARRIVE, self._send, u)

    def first_token(self, request: Request) -> None:
        """Nothing waits for a first token here."""

    def answered(self, request: Request) -> None:
        """The user's answer is out: it thinks, then sends again if the window is still open."""
        t, loop = self.scenario.traffic, self.loop
        u = request.session
        think = t.think_s * (0.5 + self.thinks[u].random()) if t.think_s else 0.0
        at = loop.now + think  # type: ignore[union-attr]
        if at < self.scenario.duration_s:
            loop.at(at, ARRIVE, self._send, u)  # type: ignore[union-attr]

    def nominal_s(self) -> list[float]:
        """Send times as sent: a closed population asks for no open-loop rate of its own."""
        return [r.arrival_s for r in self.sent]

    def _send(self, u: int) -> None:
        t = self.scenario.traffic
        rid = len(self.sent)
        if self.limit is not None and rid >= self.limit:
            raise TooManyRequests(self.limit)
        lo = t.answer_mean - t.answer_mean // 2
        answer = int(lo + self.answers[u].random() * (2 * (t.answer_mean // 2) + 1))
        conversation, n, keys, sizes = self.state[u]
        if conversation < 0 or sum(sizes) + self.tail + answer > t.context_tokens:
            conversation, n, keys, sizes = conversation + 1, 0, (SYSTEM_KEY,), (t.prefix_tokens,)
        repeated = sum(sizes)
        tail_key, answer_key = ("tail", u, conversation, n), ("answer", u, conversation, n)
        keys, sizes = keys + (tail_key,), sizes + (self.tail,)
        request = Request(rid, self.loop.now, u, n, 0, keys, sizes, self.tail, answer,  # type: ignore[union-attr]
                          answer_key, repeated + self.tail, repeated, f"conversation/{u}/{conversation}")
        self.state[u] = (conversation, n + 1, keys + (answer_key,), sizes + (answer,))
        self.sent.append(request)
        self.route(request)  # type: ignore[misc]


def looped_source(scenario: Scenario, limit: int | None = None) -> AgentRuns | ClosedUsers | None:
    """The request source that waits for answers, if the scenario's traffic is one (agent runs, closed users)."""
    kind = scenario.traffic.kind
    if kind == "agent":
        return AgentRuns(scenario, limit)
    return ClosedUsers(scenario, limit) if kind == "closed" else None
