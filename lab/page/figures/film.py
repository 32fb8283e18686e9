"""The request film: a stretch of the run as a timeline the page plays, request by request.

`film(scenario, result)` reads nothing but the run's own records and its
per-bin eviction counts; there is no second model. It gives, for a stretch
of the run (`stretch`: 60 s from the start, or from 15 s before the first
event, and at most `MAX_REQUESTS` requests):

- each request's arrival at its replica, when its prefill started and
  ended, and how much of its prompt the replica's cache held;
- each replica's tree as leaves: one trunk per system prompt and one leaf
  per session hanging off it, with the tokens each holds, and a list of
  tree events `(time, leaf, tokens after)` that grow and shrink them.

How the leaves follow the run. A request that ends its prefill caches its
prompt and its answer on its replica: its session's leaf grows to hold
them, its system prompt's trunk to the system prompt. When it starts, its
record says how much of its prompt was found: its leaf is set to exactly
that (beyond the trunk), so the drawing agrees with every record. Tokens go
as the run's own per-bin counts say (`Series.evicted_tokens`): each
replica's evictions in a bin are shared among the prefills that ended there
in proportion to the tokens each added, and taken from the least recently
used leaves, tip first (a trunk only once no leaf hangs off it), as the
radix tree evicts. Which leaf loses them is this module's reading of that
rule; how many go, and when, are the run's.

`frame(f, t)` is where every request and leaf stands at a moment: the rule
`static/film.js` draws by, written once in Python for the tests.
Standard library, `model` only: this runs in the browser too.
"""

import math
from bisect import bisect_left
from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from lab.page import wire
from lab.page.figures.base import Context, Figure
from lab.page.figures.fleetview import per_result, replica_colour
from model import Result, Scenario, rounded_all

RequestRecord = Any  # model.metrics.RequestRecord: one served request (model does not export its name)
_ARRIVAL = attrgetter("arrival_s")  # a record's arrival time: the film's order

STRETCH_S = 60.0  # seconds of the run the film plays
LEAD_S = 15.0  # how long before the first event it starts, when the run has one
MAX_REQUESTS = 900  # requests it holds at most: a busier run plays a shorter stretch
FLIGHT_S = 0.6  # seconds on screen a request takes from the router to its replica (film.js says the same)
LINGER_S = 0.8  # seconds on screen a served request stays lit beside its replica
SYSTEM_COLOURS = ("#59a14f", "#b07aa1", "#9c755f", "#76b7b2", "#edc948", "#bab0ac", "#ff9da7", "#8cd17d")  # none is
# the pie's blue (found) or orange (computed), nor the red of an eviction


def stretch(scenario: Scenario, records: list[RequestRecord]) -> tuple[float, float]:
    """The film's start and end in run seconds: 60 s from 0, or from 15 s before the first event;
    shortened so that it holds at most `MAX_REQUESTS` arrivals."""
    return _stretch(scenario, sorted(r.arrival_s for r in records))


def _stretch(scenario: Scenario, arrivals: list[float]) -> tuple[float, float]:
    """`stretch` from every arrival time, in order: the arrivals inside the stretch are one slice of them."""
    start = max(0.0, min(e.at_s for e in scenario.events) - LEAD_S) if scenario.events else 0.0
    end = start + STRETCH_S
    first = bisect_left(arrivals, start)
    if bisect_left(arrivals, end) - first > MAX_REQUESTS:
        end = arrivals[first + MAX_REQUESTS]
    return round(start, 3), round(end, 3)


class _Trees:
    """Every replica's leaves as the records and the evictions move them (see the module's docstring).

    Each replica's leaves in recency order are a dict's keys: touching one moves it to the end (`film` does
    so itself), and eviction walks from the front. The film's events come in time order, so the order in which leaves
    were last touched is the order of their last touch times (equal times in the order touched).
    """

    __slots__ = ("ids", "info", "tokens", "children", "recency", "held", "capacity", "events")

    def __init__(self, replicas: int, capacity: int) -> None:
        self.ids: dict[tuple[int, int, int], int] = {}  # (replica, system prompt, session or -1 for a trunk) -> id
        self.info: list[tuple[int, int, int]] = []  # id -> that key
        self.tokens: list[int] = []
        self.children: dict[int, int] = {}  # trunk id -> leaves of it holding tokens
        self.recency: list[dict[int, None]] = [{} for _ in range(replicas)]  # leaf ids, least recently touched first
        self.held = [0] * replicas  # each replica's tokens
        self.capacity = capacity
        self.events: list[tuple[float, int, int]] = []  # (time, leaf id, tokens after)

    def leaf(self, replica: int, system: int, session: int) -> int:
        key = (replica, system, session)
        got = self.ids.get(key)
        if got is None:
            got = self.ids[key] = len(self.info)
            self.info.append(key)
            self.tokens.append(0)
        return got

    def set(self, t: float, i: int, tokens: int) -> None:
        before = self.tokens[i]
        if before == tokens:
            return
        self.tokens[i] = tokens
        replica, system, session = self.info[i]
        self.held[replica] += tokens - before
        if session != -1 and (tokens > 0) != (before > 0):  # a leaf filled or emptied: its trunk's count moves
            trunk = self.ids.get((replica, system, -1))
            if trunk is not None:
                self.children[trunk] = self.children.get(trunk, 0) + (tokens > 0) - (before > 0)
        self.events.append((t, i, tokens))

    def evict(self, t: float, replica: int, tokens: int, keep: int = -1) -> None:
        """Take `tokens` from `replica`'s least recently used leaves (never `keep`), a trunk only once it holds
        no leaf."""
        recent, emptied = self.recency[replica], []
        sizes, info, children = self.tokens, self.info, self.children
        for i in recent:
            if tokens <= 0:
                break
            if sizes[i] == 0:
                emptied.append(i)
                continue
            if i == keep or (info[i][2] == -1 and children.get(i, 0) > 0):
                continue
            taken = min(tokens, sizes[i])
            self.set(t, i, sizes[i] - taken)  # changes no dict's keys: `recent` may go on
            tokens -= taken
            if not sizes[i]:
                emptied.append(i)
        for i in emptied:  # an empty leaf holds nothing to take until a request touches it again
            del recent[i]


def _ends(records: list[RequestRecord]) -> list[tuple[float, float]]:
    """When each request's prefill started and when its first token was out, in run seconds (each column rounded
    in one pass)."""
    starts = [r.arrival_s + r.queue_ms / 1000 for r in records]
    ends = [r.arrival_s + r.ttft_ms / 1000 for r in records]
    return list(zip(rounded_all(list(map(min, starts, ends)), 6), rounded_all(ends, 6)))


def film(scenario: Scenario, result: Result) -> dict[str, Any]:
    """The film of `result`'s stretch: its requests, its leaves at its start and the tree events within it."""
    records = sorted(result.records, key=_ARRIVAL)  # already in arrival order, in lab mode: then one pass
    arrivals = [r.arrival_s for r in records]
    t0, t1 = _stretch(scenario, arrivals)
    series, system_tokens = result.series, scenario.traffic.system_tokens
    bins = len(series.start_s)
    last = _bin(t1, series.start_s, series.bin_s, bins)
    horizon = series.start_s[last] + series.bin_s if bins else t1  # records arriving later end after t1's bin
    records = records[:bisect_left(arrivals, max(t1, horizon))]  # those arriving before the later of the two
    ends = _ends(records)
    cells = _cells(records, ends, series.start_s, series.bin_s, bins)
    timeline = sorted([(e[0], 0, k) for k, e in enumerate(ends)] + [(e[1], 1, k) for k, e in enumerate(ends)])
    news = [_new(r) for r in records]
    added: dict[tuple[int, int], int] = {}  # (replica, bin) -> tokens the prefills ending there added
    for cell, new in zip(cells, news):
        added[cell] = added.get(cell, 0) + new
    shared: dict[tuple[int, int], int] = {}  # the bin's evictions handed out so far, and the tokens they covered
    covered: dict[tuple[int, int], int] = {}
    replicas = max(1, scenario.fleet.replicas, len(result.replicas))
    trees = _Trees(replicas, result.kv_budget_tokens)
    start_leaves: list[int] | None = None
    cache = scenario.fleet.cache
    leaves: list[tuple[int, int, int] | None] = [None] * len(records)  # request -> (trunk or -1, leaf, trunk tokens)
    tokens, recency, size, capacity = trees.tokens, trees.recency, trees.held, trees.capacity
    for t, phase, k in timeline:
        if start_leaves is None and t >= t0:
            start_leaves = list(trees.tokens)
            trees.events.clear()
        if t >= t1 and start_leaves is not None:
            break
        r = records[k]
        pair = leaves[k]
        if pair is None:  # its first event (its start): its trunk and leaf, made in that order if they are new
            trunk_tokens = min(system_tokens, r.prompt_tokens) if r.system_prompt >= 0 else 0
            session = r.session if r.session >= 0 else -2 - k  # a trace's request is a leaf of its own
            pair = leaves[k] = (trees.leaf(r.replica, r.system_prompt, -1) if trunk_tokens else -1,
                                trees.leaf(r.replica, r.system_prompt, session), trunk_tokens)
        trunk, leaf, trunk_tokens = pair
        if not cache:
            continue  # no cache: no tree to grow
        held = tokens[trunk] if trunk >= 0 else 0
        replica = r.replica
        recent = recency[replica]  # touched: moved to the end of its replica's recency order
        if trunk >= 0:
            recent.pop(trunk, None)
            recent[trunk] = None
        recent.pop(leaf, None)
        recent[leaf] = None
        if not phase:  # it starts: what its record found is what its leaf holds
            trees.set(t, leaf, max(0, r.cached_tokens - held))
            if capacity and size[replica] > capacity:  # over the capacity: a record found more than the drawing held
                trees.evict(t, replica, size[replica] - capacity, leaf)
            continue
        cell = cells[k]
        evicted = series.evicted_tokens[replica][cell[1]] if cell[1] >= 0 else 0
        if evicted and added.get(cell):
            covered[cell] = covered.get(cell, 0) + news[k]
            due = round(evicted * covered[cell] / added[cell])  # cumulative, so the bin's shares sum to its count
            trees.evict(t, replica, due - shared.get(cell, 0), leaf)
            shared[cell] = due
        if trunk >= 0:
            trees.set(t, trunk, max(held, trunk_tokens))
        cached_after = r.prompt_tokens + (r.answer_tokens if r.session >= 0 else 0) - trunk_tokens
        trees.set(t, leaf, max(tokens[leaf], cached_after))
        if capacity and size[replica] > capacity:
            trees.evict(t, replica, size[replica] - capacity, leaf)
    if start_leaves is None:
        start_leaves = list(trees.tokens)
        trees.events.clear()
    start_leaves += [0] * (len(trees.tokens) - len(start_leaves))
    shown = [k for k, r in enumerate(records) if t0 <= r.arrival_s < t1]
    played = [records[k] for k in shown]
    cols = {  # column by column: one comprehension each, in the order film.js reads them
        "arrive": rounded_all([r.arrival_s for r in played], 4), "start": rounded_all([ends[k][0] for k in shown], 4),
        "end": rounded_all([ends[k][1] for k in shown], 4), "replica": [r.replica for r in played],
        "cached": [r.cached_tokens for r in played], "prompt": [r.prompt_tokens for r in played],
        "session": [r.session for r in played], "turn": [r.turn for r in played],
        "system": [r.system_prompt for r in played], "queue_ms": rounded_all([r.queue_ms for r in played], 1),
        "ttft_ms": rounded_all([r.ttft_ms for r in played], 1)}
    return {
        "t0": t0, "t1": t1, "replicas": replicas, "capacity": result.kv_budget_tokens,
        "flight_s": FLIGHT_S, "linger_s": LINGER_S,
        "replica_colours": [replica_colour(i) for i in range(replicas)],
        "system_colours": list(SYSTEM_COLOURS),
        "requests": cols,
        "leaves": {"replica": [k[0] for k in trees.info], "system": [k[1] for k in trees.info],
                   "trunk": [k[2] == -1 for k in trees.info], "tokens": start_leaves},
        "tree": {"t": rounded_all([e[0] for e in trees.events], 4), "leaf": [e[1] for e in trees.events],
                 "tokens": [e[2] for e in trees.events]},
    }


def _cells(records: list[RequestRecord], ends: list[tuple[float, float]], starts: tuple[float, ...], bin_s: float,
           bins: int) -> list[tuple[int, int]]:
    """(replica, `_bin` of its first token) of every request: `_bin` written out, as it runs once per request."""
    if not bins:
        return [(r.replica, -1) for r in records]
    first, top, floor = starts[0], bins - 1, math.floor
    cells = []
    for r, (_, end) in zip(records, ends):
        k = int(floor((end - first) / bin_s))
        cells.append((r.replica, top if k > top else 0 if k < 0 else k))  # min(top, max(0, k))
    return cells


def _bin(t: float, starts: tuple[float, ...], bin_s: float, bins: int) -> int:
    """The series bin `t` falls in (the last one past the window's end); -1 with no bins."""
    if not bins:
        return -1
    return min(bins - 1, max(0, int(math.floor((t - starts[0]) / bin_s))))


def _new(r: RequestRecord) -> int:
    """Tokens a prefill adds to its replica's tree: the prompt it computed, and the answer (not for a trace)."""
    return max(0, r.prompt_tokens - r.cached_tokens) + (r.answer_tokens if r.session >= 0 else 0)


def frame(f: Mapping[str, Any], t: float, speed: float = 1.0) -> dict[str, Any]:
    """Where everything stands at run second `t`, played at `speed` run seconds a second: each request's
    phase (`flying` to its replica, `waiting`, `prefill`, `done` while lit, or absent) and each leaf's tokens."""
    req = f["requests"]
    flight, linger = f["flight_s"] * speed, f["linger_s"] * speed
    phases: dict[int, str] = {}
    for i, (arrive, start, end) in enumerate(zip(req["arrive"], req["start"], req["end"])):
        if arrive - flight <= t < arrive:
            phases[i] = "flying"
        elif arrive <= t < start:
            phases[i] = "waiting"
        elif start <= t < end:
            phases[i] = "prefill"
        elif end <= t < end + linger:
            phases[i] = "done"
    leaves = list(f["leaves"]["tokens"])
    tree = f["tree"]
    for when, leaf, tokens in zip(tree["t"], tree["leaf"], tree["tokens"]):
        if when > t:
            break
        leaves[leaf] = tokens
    return {"phases": phases, "leaves": leaves}


@per_result
def film_of(result: Result) -> dict[str, Any]:
    """`film` of a result's own scenario, remembered for the last few results (the data and the caption ask)."""
    return film(result.scenario, result)


def _film_data(c: Context) -> dict[str, dict]:
    return {"#film-data": {"text": wire.dumps(film_of(c.result))}}  # its columns packed (static/film.js reads them)


def _film_caption(c: Context) -> str:
    f = film_of(c.result)
    req = f["requests"]
    n = len(req["arrive"])
    if not n:
        return f"No request arrives between {f['t0']:,.0f} s and {f['t1']:,.0f} s, so there is nothing to play."
    found = sum(req["cached"]) / max(1, sum(req["prompt"]))
    waited = sum(1 for q in req["queue_ms"] if q > 0)
    gone = sum(max(0, a - b) for a, b in _drops(f))
    return (f"The film plays the run from {f['t0']:,.0f} s to {f['t1']:,.0f} s: {n:,} requests travel from the router "
            f"to {f['replicas']} replicas; {waited:,} of them wait in a queue first. Each one lights up by the share of "
            f"its prompt its replica had cached ({found:.0%} of their prompt tokens in all). Each replica's strip is its "
            f"cache, one block per system prompt and one leaf per conversation; {gone:,} tokens are evicted in the "
            "stretch, least recently used leaves first, as many as the run counted in each time bin.")


def _drops(f: Mapping[str, Any]) -> list[tuple[int, int]]:
    """(tokens before, tokens after) of every tree event that shrank a leaf."""
    leaves = list(f["leaves"]["tokens"])
    out = []
    for leaf, tokens in zip(f["tree"]["leaf"], f["tree"]["tokens"]):
        if tokens < leaves[leaf]:
            out.append((leaves[leaf], tokens))
        leaves[leaf] = tokens
    return out


FIGURES = (Figure("film", "Watch the requests", _film_data, _film_caption, canvas=True,
                  controls=("fleet.replicas", "fleet.memory_gb", "router.kind", "traffic.session_rate")),)
