"""What one run on the command line may cost, declared once, and the check made before anything runs.

A run keeps its traffic and every request's record in memory: about
`BYTES_PER_REQUEST` each at most (measured with `bench/bench_replay.py` and
`prefix-lab run`: 1.3 KB in lab mode, 2.0 KB in serving mode, 2.3 KB for
agent runs), so `RUN_MAX_REQUESTS` bounds a run at about `RUN_MAX_BYTES`. A
larger setup is refused before anything runs, with one line naming the bound
and what to change (`check_run`).

The requests are counted, not estimated, and the count stops as soon as it
passes the bound (`fits`, `model.sent_at_most`): chat sessions' turns and
agent runs' calls, drawn as the run draws them. Closed users send each request when their last answer is out, so their
count is known only by running: such a run is given the bound as its `limit`
and stops with the same line when it passes it.

A replay in lab mode keeps no records (`model.replay(keep_records=False)`):
it measures each request as it is served, in about `STREAMED_BYTES_PER_REQUEST`
(each TTFT twice, for the exact percentiles of the run and of its bin; 358,000
requests replayed in 46 MB instead of 319 MB), so it may run
`REPLAY_MAX_REQUESTS`. A fleet that falls behind still holds its queue, as
any run does: the requests waiting are in memory until they are served. In serving mode, or with `--requests` kept in a
list by a caller, the in-memory bound applies. With `fleet.memory_gb=none`
the trees keep every block they were sent: `NODE_BYTES` each, counted from the
trace's hash ids (`check_replay`).
"""

from model import Scenario, TraceInfo, sent_at_most

__all__ = ["BYTES_PER_REQUEST", "NODE_BYTES", "REPLAY_MAX_REQUESTS", "RUN_MAX_BYTES", "RUN_MAX_REQUESTS",
           "STREAMED_BYTES_PER_REQUEST", "RunTooLarge", "check_replay", "check_run", "fits", "too_large"]

RUN_MAX_REQUESTS = 500_000  # requests one run may keep in memory
BYTES_PER_REQUEST = 2_600  # the most a kept request costs (agent runs; chat in lab mode: half that)
RUN_MAX_BYTES = RUN_MAX_REQUESTS * BYTES_PER_REQUEST  # about 1.3 GB
STREAMED_BYTES_PER_REQUEST = 60  # a streamed replay: two TTFTs and the heap's share (measured: 57)
REPLAY_MAX_REQUESTS = 20_000_000  # requests a streamed replay may measure (1.2 GB; a trace of about 2.4 GB)
NODE_BYTES = 400  # a tree node of one block, with its share of the eviction heap
MAX_BYTES = RUN_MAX_BYTES  # what any one run may hold, streamed or not


class RunTooLarge(Exception):
    """A run over the declared bound; the message is one line naming the bound and what to change."""


def too_large(what: str, bound: int, fix: str) -> RunTooLarge:
    return RunTooLarge(f"{what} more than {bound:,} requests, the most one run may keep in memory (about "
                       f"{bound * BYTES_PER_REQUEST / 1e9:.1f} GB); {fix}")


def fits(scenario: Scenario, limit: int | None = None) -> bool | None:
    """Whether the scenario's traffic sends at most `limit` requests, counted without building them
    (`model.sent_at_most`); None for closed users (their count is known only by running)."""
    return sent_at_most(scenario, RUN_MAX_REQUESTS if limit is None else limit)


def check_run(scenario: Scenario, what: str = "this setup sends") -> None:
    """RunTooLarge if the scenario's traffic sends more than RUN_MAX_REQUESTS (see the module's docstring)."""
    if fits(scenario, RUN_MAX_REQUESTS) is False:
        raise too_large(what, RUN_MAX_REQUESTS, _FIX)


_FIX = "shorten duration_s or lower the traffic's rate (traffic.session_rate, traffic.agent_rate)"


def check_replay(scenario: Scenario, info: TraceInfo, streamed: bool) -> None:
    """RunTooLarge if replaying the trace `info` describes on `scenario` would pass the declared bound."""
    bound = REPLAY_MAX_REQUESTS if streamed else RUN_MAX_REQUESTS
    if info.requests > bound:
        how = "a streamed replay measures" if streamed else "a serving-mode replay keeps"
        raise RunTooLarge(f"the trace has {info.requests:,} requests; {how} at most {bound:,} in one run: replay its "
                          "first ones (head -n) or split it")
    if scenario.fleet.memory_gb == float("inf") and info.blocks * NODE_BYTES > MAX_BYTES:
        raise RunTooLarge(f"fleet.memory_gb=none keeps every block the trace sends: up to {info.blocks:,} blocks, "
                          f"about {info.blocks * NODE_BYTES / 1e9:.1f} GB, more than the {MAX_BYTES / 1e9:.1f} GB one "
                          "run may hold; give the replicas a memory size")
