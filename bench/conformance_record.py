"""Records the decision files of issue 26: the real routers' cache_aware decisions on the lab's own chat, as text.

    python bench/conformance_record.py [--out DIR] [--router sglang|vllm|both] [--only NAME ...] [--list]
    python bench/conformance_record.py --compare [--out DIR]

Each stream is the lab's chat traffic (`model.generate` of a scenario, its
first N requests, each written out by one `model.routing.text.Renderer` per stream)
sent one request at a time through `bench/router_harness.py`, behind four
fake workers. Loads come from holding answers: `seq` streams release each
answer before the next send (every load ties at zero), `held` streams hold
request i until k_i more requests have been sent, k_i drawn from a seeded
`random.Random` (so the same stream holds the same requests for every router).

The files, `DIR/<router>-<params>-<traffic>-<schedule><N>.jsonl.gz`:

- for each parameter set (the launcher's defaults, `p05` = 0.5/32/1.1, the
  values `CacheAwareConfig::default()` has, and `p07` = 0.7/16/1.25), the
  lab's default chat sent one at a time (300; every sequential stream piles
  up on one worker) and held so that loads reach 90+ (450);
- 100-token system prompts, whose later turns match 30-50% of their text,
  one at a time (300) and held (450, with the defaults and with `p05`);
- a skewed chat (Zipf 2: one system prompt takes most requests) held so
  that the busiest worker runs more than 64 ahead of the idlest;
- a small tree (`--max-tree-size 30000`, characters for sgl-router; 60000
  for vLLM's router, whose tree counts units of its own: a prompt of t tokens
  added 8t - 7 in a measurement, two a character of these prompts) pruned
  every second (`--eviction-interval-secs 1`), its requests paced over about
  fourteen seconds so that eviction passes fall between them; no request goes
  from 100 ms before a pass is due until 50 ms after it ended, so a replay
  that places the passes a few milliseconds off still sees the same trees.

A line per file gives its counts, worked out from the file alone: decisions
per worker, the largest in-flight count and spread, decisions whose best
match (over every earlier text routed, so without eviction) is 30-50% of the
prompt, decisions whose best match is held by several workers at equal
length, and the eviction passes the router logged. `--compare` sets each
vLLM router file beside the sgl-router file of the same stream and counts
the decisions they share; worker indices are first put in each router's own
tie order (both break ties by a worker order that changes with every launch).
It also counts how many decisions of each file fit the rule vLLM's router
was seen to follow (`vllm_rule`), which differs from sgl-router's only where
several workers hold the best match at equal length.
"""

from __future__ import annotations

import argparse
import bisect
import random
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from router_harness import (
    ROUTERS,
    HarnessError,
    Recording,
    Release,
    Send,
    installed,
    read_decisions,
    record,
    write_decisions,
)

from model import Scenario, generate
from model.routing.text import Renderer

OUT = Path(__file__).resolve().parent / "conformance"
WORKERS = 4
PARAMS = {  # name -> the launcher's flags for the three thresholds
    "defaults": [],
    "p05": ["--cache-threshold", "0.5", "--balance-abs-threshold", "32", "--balance-rel-threshold", "1.1"],
    "p07": ["--cache-threshold", "0.7", "--balance-abs-threshold", "16", "--balance-rel-threshold", "1.25"],
}
TRAFFIC = {  # name -> scenario keys over the lab's defaults
    "chat": {},
    "sys100": {"traffic.system_tokens": "100", "traffic.dynamic_at": "50"},
    "skew": {"traffic.zipf_s": "2"},
}
EVICTION = ("--max-tree-size", "30000", "--eviction-interval-secs", "1")
# vLLM's router counts its tree in units of its own, 8 per token after a prompt's first (2 per character of
# these prompts): the same budget is twice the number
VLLM_EVICTION = ("--max-tree-size", "60000", "--eviction-interval-secs", "1")


@dataclass(frozen=True, slots=True)
class Stream:
    params: str
    traffic: str
    schedule: str  # "seq" or "held"
    n: int
    hold: tuple[int, int] = (0, 0)  # held: request i is released after this many more sends, drawn uniformly
    seed: int = 1
    pace_s: float | None = None  # seconds between sends (None: as fast as the router answers)
    extra: tuple[str, ...] = ()  # launcher flags beyond the parameter set
    vllm_extra: tuple[str, ...] | None = None  # the same for vLLM's router, when its units differ (None: `extra`)
    tag: str = ""  # a word in the name setting the stream apart
    guard_s: tuple[float, float] | None = None  # no send this long before an eviction pass, and after it

    @property
    def name(self) -> str:
        return f"{self.params}-{self.traffic}{self.tag}-{self.schedule}{self.n}"

    def args(self, router: str) -> list[str]:
        extra = self.vllm_extra if router == "vllm" and self.vllm_extra is not None else self.extra
        return PARAMS[self.params] + list(extra)


STREAMS = [
    *[Stream(p, "chat", "seq", 300) for p in PARAMS],
    *[Stream(p, "chat", "held", 450, (250, 450), seed=2) for p in PARAMS],
    Stream("defaults", "sys100", "seq", 300),
    Stream("defaults", "sys100", "held", 450, (250, 450), seed=3),
    Stream("p05", "sys100", "held", 450, (250, 450), seed=3),
    Stream("defaults", "skew", "held", 450, (200, 400), seed=4),
    Stream("defaults", "chat", "held", 350, (4, 40), seed=5, pace_s=0.04, extra=EVICTION,
           vllm_extra=VLLM_EVICTION, tag="-evict", guard_s=(0.1, 0.05)),
]


def texts(traffic: str, n: int) -> list[str]:
    """The first `n` prompts of a traffic, written out by one renderer."""
    requests = generate(Scenario().with_text(TRAFFIC[traffic]))
    if len(requests) < n:
        raise HarnessError(f"traffic {traffic} has only {len(requests)} requests, not {n}")
    renderer = Renderer()
    return [renderer.prompt(r.keys, r.sizes) for r in requests[:n]]


def steps(stream: Stream) -> list[Send | Release]:
    """The stream's sends and releases, the same for every router."""
    prompts = texts(stream.traffic, stream.n)
    out: list[Send | Release] = []
    if stream.schedule == "seq":
        for i, text in enumerate(prompts):
            out += [Send(i, text, _at(stream, i)), Release(i)]
        return out
    rng = random.Random(f"{stream.seed}-holds")
    due: dict[int, list[int]] = {}  # send index -> requests released right after it
    for i, text in enumerate(prompts):
        out.append(Send(i, text, _at(stream, i)))
        due.setdefault(i + rng.randint(*stream.hold), []).append(i)
        out += [Release(j) for j in due.pop(i, [])]
    out += [Release(j) for k in sorted(due) for j in due[k]]
    return out


def _at(stream: Stream, i: int) -> float | None:
    return None if stream.pace_s is None else i * stream.pace_s


# --- figures worked out from a file alone ---

def _lcp(a: str, b: str) -> int:
    """Characters two texts share at their start (a binary search over slices, compared in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _best_match(text: str, sorted_texts: list[str]) -> int:
    """The longest start `text` shares with any of `sorted_texts`: one of its two neighbours in sorted order has it."""
    k = bisect.bisect_left(sorted_texts, text)
    return max([_lcp(text, sorted_texts[j]) for j in (k - 1, k) if 0 <= j < len(sorted_texts)], default=0)


def figures(head: dict[str, Any], decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of a decision file: per worker, loads, and the regimes issue 26 asks to cover."""
    n = head["workers"]
    config = head["config"]
    threshold, abs_threshold = config["cache_threshold"], config["balance_abs_threshold"]
    chosen = [0] * n
    routed: list[list[str]] = [[] for _ in range(n)]  # per worker, the texts routed to it so far, sorted
    spread_max = in_flight_max = rate_band = equal_matches = imbalanced = 0
    for d in decisions:
        loads, text = d["in_flight"], d["text"]
        chosen[d["chosen"]] += 1
        in_flight_max = max(in_flight_max, max(loads))
        spread = max(loads) - min(loads)
        spread_max = max(spread_max, spread)
        imbalanced += spread > abs_threshold
        best = [_best_match(text, texts) for texts in routed]
        top = max(best)
        rate = top / len(text) if text else 0.0
        rate_band += 0.3 < rate <= 0.5
        equal_matches += top > 0 and rate > threshold and best.count(top) > 1 and spread <= abs_threshold
        bisect.insort(routed[d["chosen"]], text)
    return {"decisions": len(decisions), "chosen": chosen, "in_flight_max": in_flight_max, "spread_max": spread_max,
            "spread_past_abs": imbalanced, "rate_30_50": rate_band, "equal_matches": equal_matches}


def describe(name: str, head: dict[str, Any], decisions: list[dict[str, Any]]) -> str:
    f = figures(head, decisions)
    pile = " (all to one worker)" if max(f["chosen"]) == f["decisions"] else ""
    return (f"{name}: {f['decisions']} decisions, per worker {f['chosen']}{pile}, in flight up to {f['in_flight_max']}, "
            f"spread up to {f['spread_max']} ({f['spread_past_abs']} past abs {head['config']['balance_abs_threshold']}), "
            f"match 30-50%: {f['rate_30_50']}, equal-length matches on several workers: {f['equal_matches']}")


# --- recording and comparing ---

def path_of(out: Path, router: str, stream_name: str) -> Path:
    return out / f"{router}-{stream_name}.jsonl.gz"


def run(router: str, stream: Stream, out: Path) -> tuple[Recording, float]:
    start = time.monotonic()
    rec = record(router, WORKERS, steps(stream), stream.args(router), eviction_guard_s=stream.guard_s)
    write_decisions(path_of(out, router, stream.name), rec)
    return rec, time.monotonic() - start


def ranks(head: dict[str, Any], decisions: list[dict[str, Any]]) -> list[tuple[int, tuple[int, ...]]]:
    """Each decision as (place of the chosen worker in the tie order, in-flight counts in tie order)."""
    order = head["tie_order"]
    place = {w: k for k, w in enumerate(order)}
    return [(place[d["chosen"]], tuple(d["in_flight"][w] for w in order)) for d in decisions]


def _least_loaded(workers: Iterable[int], loads: Sequence[int], place: dict[int, int]) -> int:
    """The least loaded of `workers`, a tie to the one first in the tie order."""
    return min(workers, key=lambda w: (loads[w], place[w]))


def vllm_rule(head: dict[str, Any], decisions: list[dict[str, Any]]) -> dict[str, int]:
    """How a file's decisions fit the rule vLLM's router 0.1.17 was seen to follow, and where they do not.

    The rule: imbalanced (spread past the absolute threshold and max past min times the relative one), or the
    best match at most the cache threshold: the least loaded worker; else the worker with the longest match,
    several at equal length: the least loaded of them; every tie on load to the first in the tie order. Matches
    are over every earlier text (no eviction), so files with eviction fit it less for that reason alone.
    """
    n, order, config = head["workers"], head["tie_order"], head["config"]
    place = {w: k for k, w in enumerate(order)}
    routed: list[list[str]] = [[] for _ in range(n)]
    out = {"fit": 0, "decisions": len(decisions), "equal": 0, "equal_not_least_loaded": 0}
    for d in decisions:
        loads, text = d["in_flight"], d["text"]
        high, low = max(loads), min(loads)
        best = [_best_match(text, texts) for texts in routed]
        top = max(best)
        imbalanced = high - low > config["balance_abs_threshold"] and high > low * config["balance_rel_threshold"]
        if imbalanced or not text or top / len(text) <= config["cache_threshold"]:
            expect = _least_loaded(range(n), loads, place)
        else:
            tied = [w for w in range(n) if best[w] == top]
            expect = _least_loaded(tied, loads, place)
            if len(tied) > 1:
                out["equal"] += 1
                out["equal_not_least_loaded"] += d["chosen"] != expect
        out["fit"] += d["chosen"] == expect
        bisect.insort(routed[d["chosen"]], text)
    return out


def compare(out: Path, names: Sequence[str]) -> list[str]:
    lines = []
    for name in names:
        ours, theirs = path_of(out, "sglang", name), path_of(out, "vllm", name)
        if not (ours.exists() and theirs.exists()):
            continue
        (ha, da), (hb, db) = read_decisions(ours), read_decisions(theirs)
        a, b = ranks(ha, da), ranks(hb, db)
        same = sum(x[0] == y[0] for x, y in zip(a, b))
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
        va, vb = vllm_rule(ha, da), vllm_rule(hb, db)
        lines.append(f"vllm vs sglang, {name}: same worker {same} of {len(a)}, "
                     + ("identical decisions and loads" if first is None else f"identical up to decision {first}")
                     + f"; vLLM's rule fits {vb['fit']} of {vb['decisions']} vLLM decisions and {va['fit']} of "
                     f"{va['decisions']} sgl-router ones (sgl-router took another than the least loaded of several "
                     f"equal-length matches {va['equal_not_least_loaded']} of {va['equal']} times)")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the decision files (default: %(default)s)")
    parser.add_argument("--router", choices=["sglang", "vllm", "both"], default="both")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="record only the streams whose name contains NAME (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the streams and exit")
    parser.add_argument("--compare", action="store_true", help="only compare the vLLM files with sgl-router's")
    args = parser.parse_args(argv)
    chosen = [s for s in STREAMS if not args.only or any(word in s.name for word in args.only)]
    if not chosen:
        print(f"conformance_record: no stream matches {args.only}; see --list", file=sys.stderr)
        return 2
    if args.list:
        for s in chosen:
            print(s.name, " ".join(s.args("sglang")))
        return 0
    if args.compare:
        for line in compare(args.out, [s.name for s in chosen]):
            print(line)
        return 0
    routers = ["sglang", "vllm"] if args.router == "both" else [args.router]
    missing = [ROUTERS[r].distribution for r in routers if not installed(r)]
    if missing:
        print(f"conformance_record: {', '.join(missing)} not installed: pip install -e '.[test]'", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for router in routers:
        for stream in chosen:
            try:
                rec, took = run(router, stream, args.out)
            except HarnessError as e:
                print(f"conformance_record: {router} {stream.name}: {e}", file=sys.stderr)
                return 1
            head, decisions = read_decisions(path_of(args.out, router, stream.name))
            evicting = rec.stats["evicting_passes"]
            extra = (f", eviction passes {len(rec.stats['eviction_passes_s'])} ({evicting} evicting, "
                     f"{rec.stats['eviction_holds']} sends held back)") if evicting else ""
            behind = f"{rec.stats['settle_behind']} of {rec.stats['settle_polls']} load polls behind"
            print(f"{describe(path_of(args.out, router, stream.name).name, head, decisions)}{extra}; "
                  f"{took:.1f} s ({behind}), {path_of(args.out, router, stream.name).stat().st_size:,} bytes", flush=True)
    if len(routers) == 2:
        for line in compare(args.out, [s.name for s in chosen]):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
