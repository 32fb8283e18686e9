"""Small builders shared by the tests."""

import json

from model.replica import Replica
from model.traffic import Request


def request(rid, keys, sizes=None, system_prompt=0, arrival_s=0.0, session=0, turn=0):
    """A hand-built request over segment `keys` (100 tokens each unless `sizes`)."""
    keys = tuple(keys)
    sizes = tuple(sizes) if sizes is not None else (100,) * len(keys)
    return Request(rid, arrival_s, session, turn, system_prompt, keys, sizes, sizes[-1], 10,
                   ("answer", rid), sum(sizes), sum(sizes) - sizes[-1], f"prompt/{system_prompt}")


def fleet(n, capacity=10_000, cache=True, overhead_s=0.015, tokens_per_s=10_000.0):
    return [Replica(i, capacity, cache, overhead_s, tokens_per_s) for i in range(n)]


def busy(replica, seconds, now=0.0):
    """Make `replica` look `seconds` busy at `now`."""
    replica.busy_until = now + seconds


def canonical(result):
    """A result as one string: its JSON and every request record, byte for byte."""
    return json.dumps(result.to_dict(), sort_keys=True) + "".join(json.dumps(r.to_dict()) for r in result.records)
