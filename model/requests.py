"""How many requests a scenario's traffic sends, counted up to a bound without building a single one.

`sent_at_most(scenario, limit)` says whether the scenario sends at most
`limit` requests. It draws what the run would draw, from the same streams
(the sessions' turns, the agent runs' calls) and stops as soon as the count
passes `limit`, so it costs a fraction of the run and never more than the
bound: a chat request in lab mode is a turn sent inside the window; in serving
mode every turn of a session begun in the window is sent (the next turn
waits for the answer, and the run goes on past the window). Closed users
send each request when their last answer is out, so no count exists before
the run: None (give the run `limit`, and it stops past it with
`TooManyRequests`).
"""

from model.config import Scenario
from model.sources.agents import _draw
from model.sources.traffic import TooManyRequests, sessions

__all__ = ["sent_at_most"]


def sent_at_most(scenario: Scenario, limit: int) -> bool | None:
    """Whether the scenario's traffic sends at most `limit` requests; None for closed users (see the module)."""
    t = scenario.traffic
    try:
        if t.kind == "closed":
            return None
        if t.kind == "agent":
            _draw(scenario, limit)  # every run's calls, as the run draws them; stops past the limit
            return True
        serving, end, count = scenario.serving, scenario.duration_s, 0
        for drawn in sessions(scenario, limit):
            if serving:
                count += len(drawn.turns)
            else:
                at = drawn.start_s
                for _, _, gap in drawn.turns:
                    if at >= end:
                        break
                    count += 1
                    at += gap
            if count > limit:
                return False
    except TooManyRequests:
        return False
    return True
