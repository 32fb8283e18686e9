"""Sessions that wait for their answers: serving mode's chat traffic.

The sessions are lab mode's (`traffic.sessions`: the same starts, system
prompts, turn sizes and gaps, drawn from the same streams), sent closed-loop:
a session's first turn goes at its start, and each later turn `gap` seconds
after the previous answer's last token, not after the previous send. When
the fleet falls behind, sessions send later and offered load falls.

A session that starts inside the window sends all its turns, however late
(the window cuts on session start, not on send time), so every fleet sees
the same sessions, contents and gaps; only send times differ. One thing in
a prompt depends on its send time, as the event means it to: a prompt sent
after a `timestamp` event carries one (at the top). Dynamic text is keyed
by session and turn, never by send order, so no other fleet's timing leaks in.

`nominal_s` gives each turn's open-loop send time (start plus the gaps, as
lab mode sends it): the load the traffic settings ask for.
"""

import math

from model.config import Scenario
from model.sources.traffic import Request, Session, TooManyRequests, _system_segments, sessions

__all__ = ["ChatSessions"]


class ChatSessions:
    """Serving mode's request source: builds each turn's request when it is sent."""

    __slots__ = ("scenario", "sessions", "first_timestamp", "history", "heads", "turns")

    def __init__(self, scenario: Scenario, limit: int | None = None) -> None:
        self.scenario = scenario
        self.sessions: list[Session] = []
        self.turns = 0  # in all sessions: the requests the run will send unless some are rejected
        for session in sessions(scenario, limit):
            self.sessions.append(session)
            self.turns += len(session.turns)
            if limit is not None and self.turns > limit:
                raise TooManyRequests(limit)
        self.first_timestamp = min((e.at_s for e in scenario.events_of("timestamp")), default=math.inf)
        self.history: dict[int, tuple[tuple, tuple, int]] = {}  # session -> keys, sizes, tokens of earlier turns
        self.heads: dict[int, tuple[tuple, tuple]] = {}  # system prompt -> its segments, no dynamic text

    def request(self, rid: int, session: int, turn: int, at: float) -> Request:
        """Turn `turn` of `session`, sent at `at` as request `rid`; turns of a session are sent in order."""
        t, s = self.scenario.traffic, self.sessions[session]
        user, answer, _ = s.turns[turn]
        prompt = s.system_prompt
        mode = "top" if at >= self.first_timestamp else self.scenario.dynamic_text
        past_keys, past_sizes, past_tokens = self.history.get(session, ((), (), 0))
        user_key, answer_key, dyn_key = ("user", session, turn), ("answer", session, turn), ("dyn", session, turn)
        if mode == "top":
            head_keys, head_sizes = _system_segments(prompt, t, dyn_key)
            cacheable = t.dynamic_at
        else:
            if prompt not in self.heads:
                self.heads[prompt] = _system_segments(prompt, t, None)
            head_keys, head_sizes = self.heads[prompt]
            cacheable = t.system_tokens + past_tokens
        keys, sizes = head_keys + past_keys + (user_key,), head_sizes + past_sizes + (user,)
        if mode == "bottom":
            keys, sizes = keys + (dyn_key,), sizes + (t.dynamic_tokens,)
        prompt_tokens = t.system_tokens + past_tokens + user + (t.dynamic_tokens if mode != "none" else 0)
        self.history[session] = (past_keys + (user_key, answer_key), past_sizes + (user, answer),
                                 past_tokens + user + answer)
        return Request(rid, at, session, turn, prompt, keys, sizes, user, answer, answer_key, prompt_tokens,
                       cacheable, f"prompt/{prompt}")

    def gap_after(self, session: int, turn: int) -> float | None:
        """Seconds from the end of `turn`'s answer to the next turn's send; None after the last turn."""
        turns = self.sessions[session].turns
        return turns[turn][2] if turn + 1 < len(turns) else None

    def nominal_s(self) -> list[float]:
        """Every turn's open-loop send time (start plus the gaps between sends), in session order."""
        out = []
        for s in self.sessions:
            at = s.start_s
            for _, _, gap in s.turns:
                out.append(at)
                at += gap
        return out
