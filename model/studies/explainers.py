"""Explainers: the article's arithmetic, as pure functions of a hardware profile and a few numbers.

Each function is a formula on a `Profile` (seconds per token, KV bytes per
token) and its inputs; the CLI verbs, the page and the simulation call
these same functions (the `cost` router and lab mode's fetching use
`fetch_plan`). The formulas:

    idle TTFT        = prefill_s(prompt)
    warm TTFT        = queued × prefill_s(queued tokens) + prefill_s(new tokens)
    breakeven cached = queue wait / (prefill_s(prompt) - overhead)       (f where warm = idle)
    KV bytes         = tokens × KV bytes per token
    fetch seconds    = KV bytes / link bytes per second
    GPU $ a month    = GPU-seconds / window seconds × 730 h × $ per GPU-hour
    API $ of a call  = (uncached + read × read multiple + written × write multiple) × input price

Link speeds are in decimal units, as links are sold (800 Gbps = 10**11
bytes a second; 7 GB/s = 7 × 10**9), and so are the GB the article quotes
for a prefix's KV; memory sizes elsewhere in the model use 2**30.

`*_of(scenario)` wrappers read the inputs from a scenario's `crossover.*`,
`transfer.*` and `money.*` keys. The time-based ones price the scenario's
`hardware.*`; the `lab` preset has no FLOP figures, so they use the
article's preset in its place and say so in `notes`. Their figures are
rounded once, here (seconds to 1e-6); the pure functions are not rounded.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from model.gpus.hardware import ARTICLE, PRESETS, Profile
from model.gpus.profile import profile_of

if TYPE_CHECKING:
    from model.config import Money, Scenario, Transfer
    from model.sources.traffic import Request

__all__ = ["HOURS_PER_MONTH", "TIERS", "Prices", "api_bill", "api_calls", "api_fanout", "compute_s", "crossover",
           "crossover_of", "explainer_profile", "fetch_plan", "fetch_s", "fleet_link", "gpu_usd_per_month", "idle_ttft_s",
           "link_bytes_per_s", "money_of", "prices_of", "transfer", "transfer_of", "warm_ttft_s"]

HOURS_PER_MONTH = 730.0  # 365 × 24 / 12: an average month
TIERS = {  # fetch tier -> (its transfer.* key, bytes a second per unit of that key)
    "rdma": ("rdma_gbps", 1e9 / 8),  # gigabits
    "nvme": ("nvme_gb_s", 1e9),
    "host": ("host_gb_s", 1e9),
}


# -- the crossover: an idle GPU against a warm one with a queue ------------------------

def compute_s(profile: Profile, tokens: float) -> float:
    """Seconds of arithmetic for `tokens` of prefill, without the fixed overhead: tokens × FLOPs per token / FLOP/s."""
    return tokens * profile.flops_per_token / profile.flops_per_s


def idle_ttft_s(profile: Profile, prompt_tokens: int) -> float:
    """An idle GPU holding none of the prompt: prefill_s(prompt)."""
    return profile.prefill_s(prompt_tokens)


def warm_ttft_s(profile: Profile, new_tokens: int, queued: int, queued_tokens: int, cached_tokens: int = 0) -> float:
    """A warm GPU lacking `new_tokens` of the prompt, behind `queued` requests of `queued_tokens` uncached each:
    queued × prefill_s(queued_tokens) + prefill_s(new_tokens) (after the `cached_tokens` it holds, which a
    measured GPU's attention reads; the article's arithmetic has no attention term)."""
    return queued * profile.prefill_s(queued_tokens) + profile.prefill_s(new_tokens, cached_tokens)


class Crossover(NamedTuple):
    """Both times to first token of the article's example, and where they cross."""

    idle_ttft_s: float  # the idle GPU recomputes the whole prompt
    warm_ttft_s: float  # the warm GPU waits for its queue, then computes what it lacks
    queue_s: float  # the warm GPU's wait: queued × prefill_s(queued tokens)
    warm_prefill_s: float  # the warm GPU's own work: prefill_s(new tokens)
    cached_fraction: float  # of the prompt, the warm GPU holds: 1 - new / prompt
    breakeven_cached_fraction: float  # the warm GPU wins above this (above 1: never)
    flips_at_queued: int | None  # the fewest queued requests at which the idle GPU wins (None: never)
    winner: str  # "warm" or "idle" (a tie goes to the idle GPU: no reason to queue)


def crossover(profile: Profile, prompt_tokens: int, new_tokens: int, queued: int, queued_tokens: int) -> Crossover:
    """The idle GPU against the warm one.

    Warm wins while queue + overhead + (1 - f) × prompt × c < overhead + prompt × c (c: seconds per token),
    that is while the cached fraction f > queue / (prompt × c): the breakeven. The queue flips the choice at
    the fewest queued requests n with n × prefill_s(queued tokens) + prefill_s(new) >= prefill_s(prompt).
    """
    idle = idle_ttft_s(profile, prompt_tokens)
    queue = queued * profile.prefill_s(queued_tokens)
    each, own = profile.prefill_s(queued_tokens), profile.prefill_s(new_tokens, prompt_tokens - new_tokens)
    warm = queue + own
    breakeven = queue / compute_s(profile, prompt_tokens)
    flips: int | None = None
    if own >= idle:
        flips = 0
    elif each > 0:
        n = int((idle - own) / each)  # then correct the float estimate against the formula itself
        while n > 0 and (n - 1) * each + own >= idle:
            n -= 1
        while n * each + own < idle:
            n += 1
        flips = n
    return Crossover(idle, warm, queue, own, 1 - new_tokens / prompt_tokens, breakeven, flips,
                     "warm" if warm < idle else "idle")


# -- moving the cache instead ------------------------------------------------------------

def fetch_s(profile: Profile, tokens: float, link_bytes_per_s: float) -> float:
    """Seconds to move the KV of `tokens` over a link: tokens × KV bytes per token / link bytes per second."""
    return tokens * profile.kv_bytes_per_token / link_bytes_per_s


def fetch_plan(profile: Profile, missing_tokens: int, link_bytes_per_s: float | None) -> tuple[int, float]:
    """(tokens fetched, seconds) for `missing_tokens` a peer holds: all of them if moving their KV is faster
    than computing them (fetch_s < compute_s), else none. The rule lab mode's replicas and the `cost`
    router share; with no link (`None`), nothing is fetched."""
    if link_bytes_per_s is None or missing_tokens <= 0:
        return 0, 0.0
    seconds = fetch_s(profile, missing_tokens, link_bytes_per_s)
    return (missing_tokens, seconds) if seconds < compute_s(profile, missing_tokens) else (0, 0.0)


def link_bytes_per_s(section: "Transfer", tier: str) -> float:
    """Bytes a second of a fetch tier (`rdma`, `nvme`, `host`), from its `transfer.*` key."""
    key, unit = TIERS[tier]
    return getattr(section, key) * unit  # type: ignore[no-any-return]


def fleet_link(scenario: "Scenario") -> float | None:
    """Bytes a second of the link lab mode's replicas fetch over (`fleet.fetch`); None if off or in serving mode."""
    tier = scenario.fleet.fetch
    if tier == "off" or scenario.serving:
        return None
    return link_bytes_per_s(scenario.transfer, tier)


def transfer(profile: Profile, prompt_tokens: int, cached_tokens: int, links: dict[str, float]) -> dict[str, float]:
    """Moving the KV of `cached_tokens` (of a `prompt_tokens` prompt) over each link, against recomputing it.

    For each link: `<tier>_s` = fetch_s(cached_tokens) and `<tier>_ttft_s` = that + prefill_s(the rest).
    `recompute_s` = compute_s(cached_tokens), the same tokens recomputed; `prompt_recompute_s` =
    prefill_s(prompt_tokens), the whole prompt on a GPU that holds none of it. Any link faster than
    `breakeven_link_bytes_per_s` = KV bytes per token × prefill tokens a second beats recomputing.
    """
    out = {"kv_bytes_per_token": profile.kv_bytes_per_token, "kv_bytes": cached_tokens * profile.kv_bytes_per_token,
           "recompute_s": compute_s(profile, cached_tokens), "prompt_recompute_s": profile.prefill_s(prompt_tokens),
           "breakeven_link_bytes_per_s": profile.kv_bytes_per_token * profile.prefill_tokens_per_s()}
    rest = profile.prefill_s(prompt_tokens - cached_tokens, cached_tokens)
    for tier, rate in links.items():
        out[f"{tier}_s"] = fetch_s(profile, cached_tokens, rate)
        out[f"{tier}_ttft_s"] = out[f"{tier}_s"] + rest
    return out


# -- what it costs ---------------------------------------------------------------------------

def gpu_usd_per_month(gpu_s: float, window_s: float, usd_per_hour: float) -> float:
    """GPU-seconds spent over a window, kept up for a month: gpu_s / window_s × 730 h × $ per GPU-hour."""
    return gpu_s / window_s * HOURS_PER_MONTH * usd_per_hour


class Prices(NamedTuple):
    """An API's input price and its prompt-caching terms."""

    input_usd_per_mtok: float
    read_multiple: float  # a cache read costs this × the input price
    write_multiple: float  # a cache write costs this × the input price
    lifetime_s: float  # an entry lives this long after its last use (each use refreshes it)

    def usd(self, uncached: float, read: float, written: float) -> float:
        """(uncached + read × read multiple + written × write multiple) × input price per token."""
        return (uncached + read * self.read_multiple + written * self.write_multiple) * self.input_usd_per_mtok / 1e6


def api_calls(prices: Prices, calls: int, prompt_tokens: int, new_tokens: int, gap_s: float) -> dict[str, Any]:
    """A run of `calls` calls `gap_s` apart, each prompt repeating all but its last `new_tokens` of the one before.

    Without caching every call pays its prompt at the input price. With caching the first call writes
    its prompt; a later call reads the repeated part and writes the new part, unless the gap outlived
    the entry (gap > lifetime): then it writes the whole prompt again. Caching pays from call k on, the
    first k with k × prompt > write × prompt + (k - 1) × (a later call's price).
    """
    alive = gap_s <= prices.lifetime_s
    plain = prices.usd(prompt_tokens, 0, 0)
    first = prices.usd(0, 0, prompt_tokens)
    later = prices.usd(0, prompt_tokens - new_tokens, new_tokens) if alive else first
    cached = first + (calls - 1) * later
    saved_each = plain - later  # what each later call saves over paying in full
    pays_from = None  # None: later calls save nothing, so caching never catches up
    if saved_each > 0:
        pays_from = max(1, 1 + int((first - plain) / saved_each))  # then correct the float estimate
        while pays_from > 1 and (pays_from - 1) * plain > first + (pays_from - 2) * later:
            pays_from -= 1
        while pays_from * plain <= first + (pays_from - 1) * later:
            pays_from += 1
    return {"uncached_usd": calls * plain, "cached_usd": cached, "first_call_usd": first, "later_call_usd": later,
            "plain_call_usd": plain, "entry_alive": alive, "pays_from_call": pays_from,
            "saving": 1 - cached / (calls * plain) if plain else 0.0}


def api_fanout(prices: Prices, branches: int, shared_tokens: int, warm_first: bool) -> float:
    """Dollars for `branches` sub-calls sharing `shared_tokens` of prompt.

    All at once, none can read what another is still writing: branches × write × shared. The first
    alone, the rest at its first token: one write and (branches - 1) reads.
    """
    if warm_first:
        return prices.usd(0, (branches - 1) * shared_tokens, shared_tokens)
    return prices.usd(0, 0, branches * shared_tokens)


def api_bill(calls: Iterable[tuple["Request", float]], prices: Prices) -> dict[str, float]:
    """What a run's requests would cost an API client, with prompt caching and without.

    `calls` are (request, time its first token came out), in send order. The provider keeps an entry
    for every prefix a call sent, at segment boundaries, from that call's first token (before it
    nothing can be read: the fan-out race) until `lifetime_s` after its last use. A call reads its
    longest live prefix and writes the rest; without caching it pays every prompt token in full.
    """
    ready: dict[Any, float] = {}  # prefix id -> when it became readable
    used: dict[Any, float] = {}  # prefix id -> its last use
    read = written = total = 0
    node: Any
    for request, first_token_s in calls:
        at, node, hit, reading = request.arrival_s, (), 0, True
        for key, size in zip(request.keys, request.sizes):
            node = (node, key)  # a prefix's id: its parent's and its last segment, as vLLM's block hashes chain
            live = node in used and used[node] >= at - prices.lifetime_s
            reading = reading and live and ready[node] <= at
            if reading:
                hit += size
            elif not live:
                ready[node] = first_token_s  # a new entry, readable from this call's first token
            else:
                ready[node] = min(ready[node], first_token_s)  # being written by another call too: the race
            used[node] = at
        read += hit
        written += request.prompt_tokens - hit
        total += request.prompt_tokens
    return {"cached_usd": prices.usd(0, read, written), "uncached_usd": prices.usd(total, 0, 0),
            "read_tokens": read, "written_tokens": written, "prompt_tokens": total}


# -- from a scenario ------------------------------------------------------------------------

def explainer_profile(scenario: "Scenario") -> tuple[Profile, tuple[str, ...]]:
    """The profile the time-based explainers price: the scenario's, or with the lab preset the article's."""
    if scenario.hardware.preset != "lab":
        return profile_of(scenario)[0], ()
    profile, _ = profile_of(scenario.in_lab_mode({"hardware.preset": ARTICLE}))
    return profile, (f"the lab preset has no FLOP figures, so these figures use {ARTICLE} "
                     f"({PRESETS[ARTICLE].label}) with any hardware.* keys given",)


def crossover_of(scenario: "Scenario") -> dict[str, Any]:
    """`crossover` on the scenario's `crossover.*` inputs, as JSON-ready figures."""
    profile, notes = explainer_profile(scenario)
    c = scenario.crossover
    x = crossover(profile, c.prompt_tokens, c.new_tokens, c.queued, c.queued_tokens)
    return {"hardware": profile.preset, **{k: _round(v) for k, v in x._asdict().items()},
            "inputs": {"prompt_tokens": c.prompt_tokens, "new_tokens": c.new_tokens, "queued": c.queued,
                       "queued_tokens": c.queued_tokens}, "notes": list(notes)}


def transfer_of(scenario: "Scenario") -> dict[str, Any]:
    """`transfer` on the scenario's `transfer.*` inputs, over every tier, as JSON-ready figures."""
    profile, notes = explainer_profile(scenario)
    t = scenario.transfer
    links = {tier: link_bytes_per_s(t, tier) for tier in TIERS}
    figures = transfer(profile, t.prompt_tokens, t.cached_tokens, links)
    return {"hardware": profile.preset, **{k: _round(v) for k, v in figures.items()},
            "link_bytes_per_s": links, "inputs": {"prompt_tokens": t.prompt_tokens, "cached_tokens": t.cached_tokens},
            "notes": list(notes)}


def prices_of(money: "Money") -> Prices:
    """The API prices of a scenario's `money.*` keys."""
    return Prices(money.input_usd_per_mtok, money.read_multiple, money.write_multiple, money.lifetime_s)


def money_of(scenario: "Scenario", prefill_gpu_s: float | None = None, recompute_gpu_s: float | None = None,
             calls: Iterable[tuple["Request", float]] | None = None) -> dict[str, Any]:
    """What the scenario's `money.*` prices make of an API run and fan-out, and of a run's GPU-seconds if given.

    `prefill_gpu_s` and `recompute_gpu_s` (a result's) become dollars a month at the run's rate over
    its `duration_s`; `calls` (a run's requests and first-token times) become its API bill.
    """
    m = scenario.money
    prices = prices_of(m)
    out: dict[str, Any] = {
        "api_calls": {k: _round(v) for k, v in api_calls(prices, m.calls, m.prompt_tokens, m.new_tokens,
                                                           m.gap_s).items()},
        "api_fanout": {"all_at_once_usd": _round(api_fanout(prices, m.branches, m.prompt_tokens, False)),
                       "first_alone_usd": _round(api_fanout(prices, m.branches, m.prompt_tokens, True))},
    }
    f = out["api_fanout"]
    f["ratio"] = _round(f["all_at_once_usd"] / f["first_alone_usd"]) if f["first_alone_usd"] else None
    if prefill_gpu_s is not None:
        window, price = scenario.duration_s, m.gpu_usd_per_hour
        out["gpu"] = {"prefill_usd_per_month": _round(gpu_usd_per_month(prefill_gpu_s, window, price)),
                      "recompute_usd_per_month": _round(gpu_usd_per_month(recompute_gpu_s or 0.0, window, price)),
                      "fleet_usd_per_month": _round(scenario.fleet.replicas * HOURS_PER_MONTH * price)}
    if calls is not None:
        out["api_bill"] = {k: _round(v) for k, v in api_bill(calls, prices).items()}
    return out


def _round(value: Any) -> Any:
    return round(value, 6) if isinstance(value, float) else value
