"""What the page shows of serving mode and of the router: pure functions from a result to page content.

Runs in the browser with `lab.page.view` (standard library, `model` and nothing
else). Each function returns new values; `lab.page.view.patches` places them.

- `serving_html(result)`: serving mode's figures (time per output token,
  end to end, the longest stall, tokens a second, the offered load against
  the configured one); empty in lab mode.
- `memory_data(result)`: the fleet's KV memory per time bin, split into
  what running requests hold and what the prefix cache holds besides
  (remembered per result: the chart and the axes' fit both ask for it).
- `per_result(fn)`: `fn(result)` remembered for the last few results;
  `forget()` drops every such memo.
- `router_html(scenario, result)`: the chosen router's rule (from its
  class) and, with the approximate view, how often it guessed wrong.
- `replicas_html(result)`: the per-replica table `prefix-lab run` prints
  (requests, hit rate, utilisation, prefill GPU-seconds).
- `slowest_html(result)`: the slowest requests, each with a button that
  asks what the router saw; `explain_html(seen)`: that decision.

Each table's column names carry their meaning and unit (`COLUMN_TIPS`),
shown on hover, tap or focus of a "?" beside the name.
"""

import functools
import heapq
import html
import itertools
from collections.abc import Callable
from typing import Any, TypeVar

from lab.page.store import STORE
from model import PRESETS, ROUTERS, Result, Scenario, rounded

PALETTE = ("#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442", "#000000")  # Okabe-Ito
REPLICA_COLOURS = PALETTE[:6] + (PALETTE[7], "#999999")  # Okabe-Ito without its yellow, which white swallows


def replica_colour(i: int) -> str:
    """One colour per replica, the same in every chart and table that tells replicas apart."""
    return REPLICA_COLOURS[i % len(REPLICA_COLOURS)]

__all__ = ["EXPLAIN_ROWS", "PALETTE", "explain_html", "memory_data", "per_result", "replica_colour",
           "replicas_html", "router_html", "serving_html", "slowest_html"]

EXPLAIN_ROWS = 8  # slowest requests listed with a "what the router saw" button
T = TypeVar("T")


def per_result(fn: Callable[[Result], T]) -> Callable[[Result], T]:
    """`fn(result)`, remembered for the last few results by identity (`STORE.derived`).

    A result is never changed once made, so what `fn` derives from it is a function of the object alone; the
    store holds each result it answers for, so no other object can take over its id. Callers must not change
    the value returned: the next caller gets the same one.
    """
    kept = STORE.derived(f"{fn.__module__}.{fn.__qualname__}")

    @functools.wraps(fn)
    def remembered(result: Result) -> T:
        found = kept.get(id(result))
        if found is not None and found[0] is result:
            return found[1]  # type: ignore[no-any-return]
        value = fn(result)
        kept.put(id(result), (result, value))
        return value

    return remembered


def serving_html(result: Result) -> str:
    """Serving mode's figures as a short list; '' in lab mode (prefill only: no tokens after the first)."""
    if result.mode != "serving":
        return ""
    items = [
        ("Time per output token", f"p50 {result.tpot_p50_ms:,.1f} ms, p99 {result.tpot_p99_ms:,.1f} ms"
         if result.tpot_p50_ms is not None else "no answer longer than one token"),
        ("Arrival to last token", f"p50 {result.e2e_p50_ms:,.0f} ms, p99 {result.e2e_p99_ms:,.0f} ms"
         if result.e2e_p50_ms is not None else "–"),
        ("Longest wait between two tokens", f"p99 {result.stall_p99_ms:,.0f} ms"
         if result.stall_p99_ms is not None else "–"),
        ("Answer tokens per second", f"{result.tokens_per_s:,.0f}"),
        ("Offered load", f"{result.offered_rps:.2f} requests/s of {result.configured_rps:.2f} configured: "
         "each turn waits for the answer before it"),
    ]
    if result.rejected:
        items.append(("Refused", f"{result.rejected:,} requests larger than a replica's whole KV memory"))
    rows = "".join(f"<li><span>{html.escape(k)}</span> <strong>{html.escape(v)}</strong></li>" for k, v in items)
    hardware = PRESETS[result.hardware].label if result.hardware in PRESETS else result.hardware
    return f'<h3>Serving mode on {html.escape(hardware)}</h3><ul class="figures">{rows}</ul>'


@per_result
def memory_data(result: Result) -> dict[str, list[Any]]:
    """Per bin (at its end), the fleet's KV tokens held by running requests, the cached prefixes they pin, and
    the cache besides; and per bin (at its middle, `mid`), the tokens evicted in it; in thousands."""
    s = result.series
    ends = [rounded(t + s.bin_s, 3) for t in s.start_s]
    running, cached, pinned, evicted = ([rounded(sum(col) / 1000, 3) for col in zip(*rows)] for rows in (
        s.kv_running_tokens, s.kv_cached_tokens, s.kv_pinned_tokens, s.evicted_tokens))
    return {"t": ends[:len(running)], "running": running, "cached": cached, "pinned": pinned,
            "evicted": evicted, "mid": [rounded(t + s.bin_s / 2, 3) for t in s.start_s][:len(evicted)],
            "width": [s.bin_s * 0.8] * len(evicted), "total": [rounded(a + b, 3) for a, b in zip(running, cached)]}


def router_html(scenario: Scenario, result: Result, held_back: bool = False) -> str:
    """The router's rule in a sentence, and with its own memory for a view, how wrong that memory was (unless
    `held_back`: while a mission asks the player to guess that very share, it is said to come after the guess)."""
    cls = ROUTERS[scenario.router.kind]
    text = f"<p><strong>{html.escape(cls.label)}</strong> {html.escape(cls.rule)}.</p>"
    wrong = ("how many of the cached tokens it counted on were not there shows once you check your guess"
             if held_back else f"<strong>{result.router_overestimate:.1%}</strong> of the cached tokens it counted "
             "on were not there")
    if getattr(cls, "own_view", False):
        text += f"<p>It routes on its own tree of the text it sent, not on the caches themselves: {wrong}.</p>"
    elif scenario.router.view == "approximate":
        text += f"<p>It routes on its memory of what it sent where, not on the caches themselves: {wrong}.</p>"
    return text


# What each column of the tables holds, and in what unit: shown on hover or tap of the "?" beside its name.
COLUMN_TIPS = {
    "replicas": {
        "Replica": "The replica's number. Its colour is the same in every chart.",
        "Requests": "How many requests the router sent to this replica during the run.",
        "Hit rate": "Per cent of this replica's prompt tokens it found in its own cache.",
        "Busy": "Per cent of the run this replica spent computing.",
        "Prefill GPU-s": "Seconds of GPU time this replica spent reading prompts (prefill).",
    },
    "slowest": {
        "Request": "The request's number in the run, counted from 0.",
        "Arrived": "When it reached the router, in seconds from the start of the run.",
        "Replica": "The replica the router sent it to.",
        "Cached": "Per cent of its prompt tokens that replica already held.",
        "TTFT": "Time to first token, in milliseconds: from its arrival to its first answer token, queue included.",
    },
    "explain": {
        "Believed cached": "Prompt tokens the router believed this replica held.",
        "Actually cached": "Prompt tokens this replica really held.",
        "Backlog": "Seconds of queued work on this replica when the request arrived.",
        "In flight": "Requests this replica had started and not yet finished.",
        "Score": "The router's own score for this replica; its rule above says how it is counted.",
        "TTFT if sent there": "Time to first token, in milliseconds, had the request gone to this replica.",
    },
}


def _head(table: str, names: tuple[str, ...]) -> str:
    """A table's header row: each column's name, with its meaning and unit behind a "?" (hover, tap or focus)."""
    cells = []
    for name in names:
        tip = COLUMN_TIPS[table].get(name)
        if not tip:
            cells.append(f'<th scope="col">{html.escape(name)}</th>')
            continue
        tid = f"tip-{table}-{name.lower().replace(' ', '-')}"
        cells.append(f'<th scope="col"><span class="th-tip">{html.escape(name)}<button type="button" class="tip" '
                     f'aria-label="What is {html.escape(name)}?" aria-describedby="{tid}">?</button>'
                     f'<span class="tip-text" role="tooltip" id="{tid}">{html.escape(tip)}</span></span></th>')
    return f"<thead><tr>{''.join(cells)}</tr></thead>"


def replicas_html(result: Result) -> str:
    """One row per replica, as `prefix-lab run` prints them: requests, hit rate, utilisation, prefill GPU-s."""
    rows = "".join(f'<tr><td><span class="swatch" style="background:{replica_colour(r.index)}"></span>{r.index}</td>'
                   f"<td>{r.requests:,}</td><td>{r.hit_rate:.1%}</td>"
                   f"<td>{r.utilisation:.0%}</td><td>{r.prefill_gpu_s:,.1f}</td></tr>" for r in result.replicas)
    head = _head("replicas", ("Replica", "Requests", "Hit rate", "Busy", "Prefill GPU-s"))
    return f"<table><caption>Each replica</caption>{head}<tbody>{rows}</tbody></table>"


def slowest_html(result: Result, n: int = EXPLAIN_ROWS) -> str:
    """Rows of the slowest requests (id, arrival, replica, cached share, TTFT), each with an explain button."""
    slow = [i for _, i in heapq.nsmallest(n, zip([-r.ttft_ms for r in result.records], itertools.count()))]
    rows = []
    for i in slow:
        r = result.records[i]
        cached = r.cached_tokens / r.prompt_tokens if r.prompt_tokens else 0.0
        rows.append(f"<tr><td>{i}</td><td>{r.arrival_s:.1f} s</td><td>{r.replica}</td><td>{cached:.0%}</td>"
                    f"<td>{r.ttft_ms:,.0f} ms</td><td><button type=\"button\" data-action=\"explain\" "
                    f"data-request=\"{i}\" aria-label=\"Why? What the router saw for request {i}\">Why?</button></td></tr>")
    head = _head("slowest", ("Request", "Arrived", "Replica", "Cached", "TTFT", ""))
    return f"<table><caption>Slowest requests</caption>{head}<tbody>{''.join(rows)}</tbody></table>"


def _view_words(view: str) -> str:
    return "its own tree" if view == "own" else f"{view} view"


def _decision_html(decision: dict[str, Any] | None) -> str:
    """What a router with its own tree believed at this decision (the branch it took, its tree's match)."""
    if decision is None:
        return ""
    return f"<p>{html.escape(decision['why'])}</p>"


def explain_html(seen: dict[str, Any] | None) -> str:
    """One routing decision as the router saw it, with every replica's counterfactual TTFT."""
    if seen is None:
        return ""
    if "error" in seen:
        return f"<p>{html.escape(seen['error'])}</p>"
    head = (f"<h3>What the router saw: request {seen['request']}</h3>"
            f"<p>At {seen['arrival_s']:g} s, {seen['prompt_tokens']:,} prompt tokens; "
            f"{html.escape(ROUTERS[seen['router']].label)} ({html.escape(_view_words(seen['view']))}) chose replica "
            f"{seen['chosen']}." + (f" Its score: {html.escape(seen['score'])}." if seen["score"] else "") + "</p>"
            + _decision_html(seen.get("decision")))
    rows = []
    for r in seen["replicas"]:
        chosen = " class=\"chosen\"" if r["replica"] == seen["chosen"] else ""
        score = "" if r["score"] is None else f"{r['score']:g}"
        rows.append(f"<tr{chosen}><td>{r['replica']}</td><td>{r['believed_tokens']:,}</td><td>{r['actual_tokens']:,}</td>"
                    f"<td>{r['backlog_s']:.3f} s</td><td>{r['in_flight']}</td><td>{score}</td>"
                    f"<td>{r['ttft_ms']:,.0f} ms</td></tr>")
    columns = _head("explain", ("Replica", "Believed cached", "Actually cached", "Backlog", "In flight", "Score",
                                "TTFT if sent there"))
    table = f"<table>{columns}<tbody>{''.join(rows)}</tbody></table>"
    regret = (f"<p>The best other choice was replica {seen['best_alternative']}: "
              f"{seen['regret_ms']:,.0f} ms sooner.</p>" if seen["regret_ms"] > 0
              else "<p>No other replica would have answered sooner.</p>")
    return head + table + regret
