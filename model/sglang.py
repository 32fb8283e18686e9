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
that routed the prefix first (`equal_matches="least_loaded"`). It matches
token ids, which for the lab's text (4 characters a token, segments whole
tokens) gives the same match rates; its tree counts about 8 units a token,
2 a character (`units_per_char`); its launcher trims every 120 s to 2^25.

`SGLangRouter` knows nothing of the simulation: the `sglang` and
`vllm_router` policies feed it rendered prompts and the replicas' in-flight
counts; `prefix-lab conformance` feeds it a decision file recorded from the
real binary.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

from .textree import TextTree

__all__ = ["SGLANG_LAUNCHER", "VLLM_LAUNCHER", "Decision", "SGLangRouter", "f32"]

# What `python -m sglang_router.launch_router` runs with when no flag is given (router_args.py).
SGLANG_LAUNCHER = {"cache_threshold": 0.3, "balance_abs_threshold": 64, "balance_rel_threshold": 1.5,
            "eviction_interval_secs": 60, "max_tree_size": 2 ** 26}
# What vLLM's router (`vllm-router` 0.1.17) runs with; its tree size counts its own units (see above).
VLLM_LAUNCHER = {**SGLANG_LAUNCHER, "eviction_interval_secs": 120, "max_tree_size": 2 ** 25}

_F32 = struct.Struct("<f")


def f32(x: float) -> float:
    """`x` rounded to the nearest 32-bit float, as Rust's `as f32` does."""
    return float(_F32.unpack(_F32.pack(x))[0])


class Decision(NamedTuple):
    """One choice and why: the branch (`balance`, `cache` or `low_match`), the tree's match and its worker."""

    worker: int
    branch: str
    matched_chars: int
    text_chars: int
    tree_worker: int | None  # the worker the tree named for the match (taken only on the cache branch)


class SGLangRouter:
    """The router's decisions for `workers` workers; `order` is its worker order for ties (default 0..n-1)."""

    __slots__ = ("cache_threshold", "abs_threshold", "rel_threshold", "interval_s", "max_chars", "order", "tree",
                 "next_eviction_s", "equal_matches")

    def __init__(self, workers: int, cache_threshold: float = 0.3, balance_abs_threshold: int = 64,
                 balance_rel_threshold: float = 1.5, eviction_interval_s: float = 60,
                 max_tree_size: int = 2 ** 26, order: Sequence[int] | None = None, equal_matches: str = "first",
                 units_per_char: int = 1) -> None:
        if equal_matches not in ("first", "least_loaded"):
            raise ValueError(f"equal_matches {equal_matches!r}: use 'first' (sgl-router) or 'least_loaded' (vLLM's)")
        self.cache_threshold = f32(cache_threshold)
        self.abs_threshold = balance_abs_threshold
        self.rel_threshold = f32(balance_rel_threshold)
        self.interval_s = eviction_interval_s
        self.max_chars = max_tree_size // units_per_char  # the size bound in the tree's own characters
        self.equal_matches = equal_matches
        self.order = list(order) if order is not None else list(range(workers))
        if sorted(self.order) != list(range(workers)):
            raise ValueError(f"worker order {self.order} is not an order of workers 0 to {workers - 1}")
        self.tree = TextTree(workers)
        self.next_eviction_s = eviction_interval_s if eviction_interval_s > 0 else None

    def decide(self, text: str, loads: Sequence[int], now_s: float) -> Decision:
        """The worker the router picks for `text` at `now_s` seconds after it started (the tree is not changed)."""
        self._evict_due(now_s)
        high, low = max(loads), min(loads)
        if high - low > self.abs_threshold and f32(high) > f32(f32(low) * self.rel_threshold):
            return Decision(self._least_loaded(loads), "balance", 0, len(text), None)
        matched, named = self.tree.match(text)
        rate = f32(f32(matched) / f32(len(text))) if text else 0.0
        if rate > self.cache_threshold and named is not None:
            if self.equal_matches == "least_loaded":  # vLLM's: the least loaded of those holding the match
                held = [self.tree.held(text, w) for w in range(len(loads))]
                top = max(held)
                named = self._least_loaded(loads, [w for w, h in enumerate(held) if h == top])
            return Decision(named, "cache", matched, len(text), named)
        return Decision(self._least_loaded(loads), "low_match", matched, len(text), named)

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
