"""sgl-router 0.3.2's cache-aware rule, on its own state: the tree of text it routed and its in-flight counts.

The rule, for one request with text `text`, given each worker's load (the
requests the router has sent it whose response has not ended):

1. **Balance.** With `max` and `min` the highest and lowest loads, the fleet
   is imbalanced when `max - min > balance_abs_threshold` and `max > min x
   balance_rel_threshold` (compared as 32-bit floats). Then take the least
   loaded worker, the first in the router's worker order among equals.
2. **Cache.** Otherwise look the text up in the router's tree
   (`textree.TextTree`): the match rate is matched characters / the text's
   characters (a 32-bit float). Above `cache_threshold`, take the worker
   the tree names at the deepest node matched: the one that first routed
   that prefix, not the least loaded of those that hold it.
3. **Low match.** Otherwise take the least loaded worker (first in order
   among equals). The header of the router's `cache_aware.rs` still says
   "smallest tree" here; its code, since 2025-12-09, takes the least loaded.

Whichever branch chose, the text is then inserted into the tree for the
chosen worker. Every `eviction_interval_s` seconds after the router starts
(0: never), each worker's share of the tree is cut to `max_tree_chars`
characters by least recently used leaves. Defaults are what the launcher
(`python -m sglang_router.launch_router`) gives, not the Rust struct's
`CacheAwareConfig::default()` (0.5, 32, 1.1).

vLLM's router 0.1.17 (`vllm-router`, a fork) decides by the same rule but for
one step: when several workers hold the longest match at equal length, it
takes the least loaded of them (first in order among equals), not the one
that routed the prefix first. It matches
token ids, which for the lab's text (4 characters a token, segments whole
tokens) gives the same match rates; its tree counts about 8 units a token
(an approximation: 2 a character); its launcher trims every 120 s to 2^25
(`VLLMRouterRule`).

`SGLangRouter` knows nothing of the simulation: the `sglang` and
`vllm_router` policies feed it rendered prompts and the replicas' in-flight
counts; `prefix-lab conformance` feeds it a decision file recorded from the
real binary.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import ClassVar, NamedTuple

from model.routing.textree import TextTree

__all__ = ["SGLANG_LAUNCHER", "VLLM_LAUNCHER", "Decision", "SGLangRouter", "VLLMRouterRule", "f32"]

# What `python -m sglang_router.launch_router` runs with when no flag is given (router_args.py).
SGLANG_LAUNCHER = {"cache_threshold": 0.3, "balance_abs_threshold": 64, "balance_rel_threshold": 1.5,
                   "eviction_interval_secs": 60, "max_tree_size": 2 ** 26}
# What vLLM's router (`vllm-router` 0.1.17) runs with; its tree size counts its own units (see above).
VLLM_LAUNCHER = {**SGLANG_LAUNCHER, "eviction_interval_secs": 120, "max_tree_size": 2 ** 25}

_F32 = struct.Struct("<f")
_F32_MAX = 3.4028234663852886e38


def f32(x: float) -> float:
    """`x` rounded to the nearest 32-bit float, as Rust's `as f32` does (past the largest: infinity)."""
    try:
        return float(_F32.unpack(_F32.pack(x))[0])
    except OverflowError:  # struct refuses what Rust rounds to infinity
        return math.copysign(math.inf, x) if abs(x) > _F32_MAX else x


class Decision(NamedTuple):
    """One choice and why: the branch (`balance`, `cache` or `low_match`), the tree's match and who it named."""

    worker: int
    branch: str
    matched_chars: int
    text_chars: int
    tree_worker: int | None  # the worker the tree named at its deepest matched node (None on the balance branch)


class SGLangRouter:
    """sgl-router 0.3.2's decisions for `workers` workers; `order` is its worker order for ties (default 0..n-1).

    `max_tree_size` is in the router's own units, `UNITS_PER_CHAR` of them a
    character. Defaults are the launcher's (`SGLANG_LAUNCHER`).
    """

    LAUNCHER: ClassVar[dict[str, float]] = SGLANG_LAUNCHER
    UNITS_PER_CHAR: ClassVar[int] = 1  # sgl-router's tree counts characters

    __slots__ = ("cache_threshold", "abs_threshold", "rel_threshold", "interval_s", "max_chars", "order", "tree",
                 "next_eviction_s")

    def __init__(self, workers: int, cache_threshold: float | None = None, balance_abs_threshold: int | None = None,
                 balance_rel_threshold: float | None = None, eviction_interval_s: float | None = None,
                 max_tree_size: int | None = None, order: Sequence[int] | None = None) -> None:
        d = self.LAUNCHER
        self.cache_threshold = f32(d["cache_threshold"] if cache_threshold is None else cache_threshold)
        self.abs_threshold = int(d["balance_abs_threshold"] if balance_abs_threshold is None else balance_abs_threshold)
        self.rel_threshold = f32(d["balance_rel_threshold"] if balance_rel_threshold is None else balance_rel_threshold)
        self.interval_s = d["eviction_interval_secs"] if eviction_interval_s is None else eviction_interval_s
        size = int(d["max_tree_size"] if max_tree_size is None else max_tree_size)
        self.max_chars = size // self.UNITS_PER_CHAR  # the size bound in the tree's own characters
        self.order = list(order) if order is not None else list(range(workers))
        if sorted(self.order) != list(range(workers)):
            raise ValueError(f"worker order {self.order} is not an order of workers 0 to {workers - 1}")
        self.tree = TextTree(workers)
        self.next_eviction_s = self.interval_s if self.interval_s > 0 else None

    def decide(self, text: str, loads: Sequence[int], now_s: float) -> Decision:
        """The worker the router picks for `text` at `now_s` seconds after it started.

        Runs the evictions due by then; off the balance branch the tree's match
        advances its counter (and may refresh a stamp). The text itself is
        added by `routed`, once the caller knows where it went.
        """
        self._evict_due(now_s)
        high, low = max(loads), min(loads)
        if high - low > self.abs_threshold and f32(high) > f32(f32(low) * self.rel_threshold):
            return Decision(self._least_loaded(loads), "balance", 0, len(text), None)
        matched, named = self.tree.match(text)
        rate = f32(f32(matched) / f32(len(text))) if text else 0.0
        if rate > self.cache_threshold and named is not None:
            return Decision(self._follow(text, loads, named), "cache", matched, len(text), named)
        return Decision(self._least_loaded(loads), "low_match", matched, len(text), named)

    def _follow(self, text: str, loads: Sequence[int], named: int) -> int:
        """The worker a match above the threshold goes to: the one the tree names."""
        return named

    def routed(self, text: str, worker: int) -> None:
        """Note that `text` went to `worker` (the router inserts it whichever branch chose)."""
        self.tree.insert(text, worker)

    def _least_loaded(self, loads: Sequence[int], among: Sequence[int] | None = None) -> int:
        """The first worker in the router's order with the least load (of `among`, if given)."""
        candidates = self.order if among is None else [w for w in self.order if w in among]
        least = min(loads[w] for w in candidates)
        return next(w for w in candidates if loads[w] == least)

    def _evict_due(self, now_s: float) -> None:
        """Run the eviction the router's timer would have run by `now_s` (once is enough for any number of ticks)."""
        due = self.next_eviction_s
        if due is None or now_s < due:
            return
        self.tree.evict(self.max_chars)
        ticks = int((now_s - due) // self.interval_s) + 1
        self.next_eviction_s = due + ticks * self.interval_s


class VLLMRouterRule(SGLangRouter):
    """vLLM's router 0.1.17: of the workers holding the longest match, the least loaded (first in order among equals).

    Its tree counts about 8 units a token, taken here as 2 a character (a fit to one
    measurement: 8t - 7 units for a prompt of t tokens); defaults: `VLLM_LAUNCHER`.
    """

    LAUNCHER: ClassVar[dict[str, float]] = VLLM_LAUNCHER
    UNITS_PER_CHAR: ClassVar[int] = 2

    __slots__ = ()

    def _follow(self, text: str, loads: Sequence[int], named: int) -> int:
        held = [self.tree.held(text, w) for w in range(len(loads))]
        top = max(held)
        return self._least_loaded(loads, [w for w, h in enumerate(held) if h == top])
