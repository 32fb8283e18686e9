"""`prefix-lab conformance`: replay a real router's recorded decisions through the project's policy.

A decision file is JSON Lines (gzipped or not). Its first line is a header:
`{"router": "sglang-router 0.3.2", "policy": "cache_aware", "workers": n,
"tie_order": [worker indices in the router's order], "config":
{"cache_threshold", "balance_abs_threshold", "balance_rel_threshold"},
"launch_args": [...]}`, optionally with `max_tree_size`,
`eviction_interval_secs` and `first_request_after_launch_s` (absent: the
launcher's defaults, sgl-router's or, for a `vllm-router` header, vLLM's
router's, and 0 s). Then one line per decision, in order:
`{"t": seconds since the first, "text": the prompt, "in_flight": [per
worker, just before deciding], "chosen": worker}`.

The replay gives each decision the recorded text, loads and time, asks
`model.routing.sglang.SGLangRouter` what it would pick, and then notes the text as
routed to the worker the real router chose, so that one disagreement does
not spread to the next. A disagreement's cause names the branch the
project took and what the router's pick looks like: the least loaded, the
worker the tree named, or another.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

from model import SGLangRouter, VLLMRouterRule

__all__ = ["ConformanceError", "add_conformance_verb", "read_decisions", "replay"]

# the lab's policy -> the real router it stands for (the header's "router" starts so) and that router's rule
POLICIES = {"sglang": ("sglang-router", SGLangRouter), "vllm_router": ("vllm-router", VLLMRouterRule)}


def policy_of(header: dict[str, Any]) -> str | None:
    """The lab's policy for a decision file's router, from its header (None: a router the lab has no policy for)."""
    return next((p for p, (name, _) in POLICIES.items() if header["router"].startswith(name)), None)


class ConformanceError(ValueError):
    """A decision file that cannot be replayed; the message names the line and what to fix."""


def _lines(path: str) -> Iterator[tuple[int, str]]:
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:  # type: ignore[operator]
            for number, line in enumerate(f, 1):
                if line.strip():
                    yield number, line
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ConformanceError(f"{path}: not a UTF-8 JSON Lines file ({exc})") from None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: Any) -> bool:
    """A whole number a router keeps in a `usize`: 0 up to 2^64 - 1."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 64


def _header(where: str, h: Any) -> dict[str, Any]:
    if not isinstance(h, dict):
        raise ConformanceError(f"{where}: the first line must be the header object, with router, policy, workers, "
                               "tie_order, config and launch_args")
    for name in ("router", "policy", "workers", "tie_order"):
        if name not in h:
            raise ConformanceError(f"{where}: the header has no {name!r}")
    if h["policy"] != "cache_aware":
        raise ConformanceError(f"{where}: policy {h['policy']!r} cannot be replayed; record the router with "
                               "--policy cache_aware")
    n = h["workers"]
    if not _count(n) or not 1 <= n <= 4096:
        raise ConformanceError(f"{where}: workers {n!r}; use a whole number from 1 to 4096")
    order = h["tie_order"]
    if not isinstance(order, list) or not all(_count(w) for w in order) or sorted(order) != list(range(n)):
        raise ConformanceError(f"{where}: tie_order {order!r} must list each worker index 0 to {n - 1} once")
    config = h.get("config", {})
    if not isinstance(config, dict):
        raise ConformanceError(f"{where}: config must be an object of cache_threshold, balance_abs_threshold and "
                               "balance_rel_threshold")
    out = {"workers": n, "order": order, "router": str(h["router"])}
    policy = policy_of(out)
    launcher = POLICIES[policy or "sglang"][1].LAUNCHER
    for name, ok, hint in (("cache_threshold", lambda v: _number(v) and 0 <= v <= 1, "a number from 0 to 1"),
                           ("balance_abs_threshold", _count, "a whole number of 0 or more"),
                           ("balance_rel_threshold", lambda v: _number(v) and 0 <= v <= 1e6,
                            "a number from 0 to 1,000,000")):
        value = config.get(name, launcher[name])
        if not ok(value):
            raise ConformanceError(f"{where}: config.{name} {value!r}; use {hint}")
        out[name] = value
    for name, ok, hint in (("max_tree_size", lambda v: _count(v) and v >= 1, "a whole number of 1 or more"),
                           ("eviction_interval_secs", _count, "a whole number of seconds, 0 or more")):
        value = h.get(name, launcher[name])
        if not ok(value):
            raise ConformanceError(f"{where}: {name} {value!r}; use {hint}")
        out[name] = value
    first = h.get("first_request_after_launch_s", 0)
    if not _number(first) or first < 0:
        raise ConformanceError(f"{where}: first_request_after_launch_s {first!r}; use seconds, 0 or more")
    out["first_s"] = float(first)
    return out


def read_decisions(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the decisions of a decision file, checked; `ConformanceError` names what is wrong."""
    header: dict[str, Any] | None = None
    decisions: list[dict[str, Any]] = []
    last_t = -math.inf
    for number, line in _lines(path):
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError, ValueError):  # ValueError: an integer of thousands of digits
            raise ConformanceError(f"{where}: not a JSON object") from None
        if header is None:
            header = _header(where, item)
            continue
        n = header["workers"]
        if not isinstance(item, dict):
            raise ConformanceError(f"{where}: a decision must be an object with t, text, in_flight and chosen")
        for name in ("t", "text", "in_flight", "chosen"):
            if name not in item:
                raise ConformanceError(f"{where}: the decision has no {name!r}")
        t, text, loads, chosen = item["t"], item["text"], item["in_flight"], item["chosen"]
        if not _number(t) or t < 0 or t < last_t:
            raise ConformanceError(f"{where}: t {t!r}; use seconds since the first decision, never going back")
        if not isinstance(text, str):
            raise ConformanceError(f"{where}: text must be a string (the prompt as the router saw it)")
        if not isinstance(loads, list) or len(loads) != n or not all(_count(x) for x in loads):
            raise ConformanceError(f"{where}: in_flight must list {n} whole numbers, one per worker")
        if not _count(chosen) or chosen >= n:
            raise ConformanceError(f"{where}: chosen {chosen!r}; use a worker index from 0 to {n - 1}")
        last_t = t
        decisions.append({"t": float(t), "text": text, "in_flight": loads, "chosen": chosen})
    if header is None:
        raise ConformanceError(f"{path}: empty; a decision file starts with its header line")
    if not decisions:
        raise ConformanceError(f"{path}: a header and no decisions; record some (bench/conformance_record.py)")
    return header, decisions


def check_policy(header: dict[str, Any], policy: str) -> None:
    """`ConformanceError` unless the file was recorded from the router `policy` stands for."""
    own = policy_of(header)
    if own is not None and own != policy:
        raise ConformanceError(f"this file was recorded from {header['router']}; replay it as {own}, not {policy}")


def _cause(branch: str, chosen: int, loads: list[int], named: int | None) -> str:
    """What the router's pick looks like beside the branch the project took."""
    if chosen == named:
        looks = "the tree's worker"
    elif loads[chosen] == min(loads):
        looks = "a least loaded worker"
    else:
        looks = "another worker"
    return f"{branch}, router took {looks}"


def replay(header: dict[str, Any], decisions: list[dict[str, Any]], policy: str = "sglang") -> dict[str, Any]:
    """`{"decisions", "agree", "by_cause", "disagreements"}`: each decision asked of the project's router, then
    noted as the real router made it."""
    rule = POLICIES[policy][1]
    router = rule(header["workers"], header["cache_threshold"], header["balance_abs_threshold"],
                  header["balance_rel_threshold"], header["eviction_interval_secs"], header["max_tree_size"],
                  header["order"])
    agree = 0
    causes: Counter[str] = Counter()
    disagreements = []
    for i, d in enumerate(decisions):
        ours = router.decide(d["text"], d["in_flight"], d["t"] + header["first_s"])
        if ours.worker == d["chosen"]:
            agree += 1
        else:
            cause = _cause(ours.branch, d["chosen"], d["in_flight"], ours.tree_worker)
            causes[cause] += 1
            disagreements.append({"decision": i, "t": d["t"], "ours": ours.worker, "router": d["chosen"],
                                  "branch": ours.branch, "cause": cause, "in_flight": d["in_flight"],
                                  "match_rate": round(ours.matched_chars / ours.text_chars, 6) if ours.text_chars
                                  else 0.0})
        router.routed(d["text"], d["chosen"])
    return {"decisions": len(decisions), "agree": agree, "by_cause": dict(causes.most_common()),
            "disagreements": disagreements}


def add_conformance_verb(verbs: Any) -> Any:
    """Register `prefix-lab conformance`; the CLI sets what runs it."""
    p = verbs.add_parser("conformance", help="replay a real router's recorded decisions through the lab's policy",
                         description="Replay a decision file recorded from a real router (see docs/routers.md) through the "
                                     "lab's policy and count the decisions it makes the same way. The last line "
                                     "reads 'agree N of M'.")
    p.add_argument("policy", choices=tuple(POLICIES), help="the lab's policy to replay through (sglang for "
                   "sgl-router 0.3.2, vllm_router for vLLM's router 0.1.17)")
    p.add_argument("file", metavar="FILE.jsonl", help="decision file (JSON Lines, gzipped or not)")
    p.add_argument("--json", action="store_true", help='print {"decisions", "agree", "by_cause"} as JSON')
    return p
