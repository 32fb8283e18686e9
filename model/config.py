"""The scenario: every knob of one simulated run, as frozen dataclasses.

A scenario is plain data. It comes in as nested JSON (`Scenario.from_dict`) or
as dotted keys with text values (`Scenario.with_text`, used by the CLI's
`--set` and the page's URL hash), and goes out the same two ways (`to_dict`,
`to_text`). Every field is checked on the way in; a bad value raises
`ScenarioError` naming the dotted key, the value and what is allowed.

The dotted keys are a contract shared with the page URL and the CLI:
`seed`, `duration_s`, `dynamic_text`, `traffic.*`, `fleet.*`, `router.*`,
`hardware.*`, `crossover.*`, `transfer.*`, `money.*`, `roofline.*`, `slo.*`, `events`. Unknown keys
are errors, never ignored. `fleet.decode` picks the mode: false (the default)
is the seed's lab model, prefill only; true is serving mode
(`model/engines/serving.py`). `traffic.kind` picks the request source (chat sessions,
agent runs or a closed population of users); `crossover.*`, `transfer.*` and `money.*` are the inputs of
the explainers (`model/studies/explainers.py`, `model/studies/roofline.py`), which no run
reads except `transfer.*`'s link speeds when `fleet.fetch` is on or a
split fleet hands KV over (`fleet.handoff`); `slo.*` are the targets
serving mode's results measure against.

Events have a compact text form for URLs and `--set`:
`timestamp@120`, `surge@60+90` (start 60 s, lasting 90 s), `burst@30+20x3`
(start 30 s, lasting 20 s, arrivals times 3), joined by commas.
"""

import dataclasses
import difflib
import functools
import math
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from model.gpus.gpu import FIT_TEXT_MAX, fit_of_text
from model.gpus.hardware import PRESETS
from model.routing.kinds import KINDS

__all__ = [
    "DYNAMIC_TEXT",
    "EVENT_KINDS",
    "FETCH_TIERS",
    "HANDOFF_TIERS",
    "QUEUE_ORDERS",
    "KEYS",
    "TOKENS_PER_GB",
    "TRAFFIC_KINDS",
    "Crossover",
    "Event",
    "Fleet",
    "Hardware",
    "Money",
    "Roofline",
    "Slo",
    "Routing",
    "Scenario",
    "ScenarioError",
    "Spec",
    "Traffic",
    "Transfer",
    "closed_tail",
    "default_text",
    "describe",
    "format_text",
    "parse_events",
    "parse_text",
    "reads_of",
    "spec_of",
]

TOKENS_PER_GB = 8192
TRAFFIC_KINDS = ("chat", "agent", "closed")
FETCH_TIERS = ("off", "rdma", "nvme", "host")
HANDOFF_TIERS = ("rdma", "host", "nvme")
QUEUE_ORDERS = ("fcfs", "longest_prefix_first")
DYNAMIC_TEXT = ("none", "top", "bottom")
EVENT_KINDS = ("timestamp", "surge", "burst")
MAX_EVENTS = 24


class ScenarioError(ValueError):
    """A scenario value that cannot be used; the message names key, value and fix."""


@dataclass(frozen=True, slots=True)
class Spec:
    """What one scenario field may hold, declared once beside the field.

    `lo`..`hi` is what files, `--set` and URLs may give; `page` is the narrower
    (start, end, step) the page's control offers, or None for no control range.
    The CLI's `keys`, the page's controls and every parser read this one value.
    """

    doc: str
    lo: float | None = None  # numbers: inclusive bounds
    hi: float | None = None
    choices: tuple[str, ...] = ()  # text: the values allowed
    off: bool = False  # None is allowed too, written "off"
    page: tuple[float, float, float] | None = None
    unbounded: bool = False  # "none" (JSON null) is allowed too: no limit, stored as math.inf
    text: int = 0  # text of at most this many characters, which the key's own section reads (0: choices only)
    reads: str = ""  # which runs read it (`READS`); "": its section's

    def check(self, key: str, kind: type, value: Any) -> Any:
        """`value` as the field stores it (ints of a float field become floats); ScenarioError if not allowed."""
        if kind is bool:
            if not isinstance(value, bool):
                raise ScenarioError(f"{key}: {_show(value)} is not allowed; use true or false")
            return value
        if kind is str and self.text:
            if not isinstance(value, str) or len(value) > self.text:
                raise ScenarioError(f"{key}: {_show(value)} is not allowed; use text of at most {self.text:,} "
                                    "characters")
            return value
        if kind is str:
            if value not in self.choices:
                raise ScenarioError(f"{key}: {_show(value)} is not allowed; use one of {', '.join(self.choices)}")
            return value
        if value is None and self.off:
            return None
        if self.unbounded and (value is None or value == math.inf):
            return math.inf
        whole = kind is int
        if not _is_number(value):
            raise ScenarioError(f"{key}: {_show(value)} is not allowed; use {self._range(whole)}")
        if whole and isinstance(value, float) and not value.is_integer():
            raise ScenarioError(f"{key}: {_show(value)} is not a whole number; use a whole number from {self.lo} to {self.hi}")
        if not self.lo <= value <= self.hi:  # type: ignore[operator]
            off = " or off" if self.off else " or none" if self.unbounded else ""
            raise ScenarioError(f"{key}: {_show(value)} is out of range; use {self._range(whole)}{off}")
        return int(value) if whole else float(value)

    def _range(self, whole: bool) -> str:
        """The numbers allowed, for an error message (written only when one is raised: checks run on every build)."""
        return f"{'a whole number' if whole else 'a number'} from {_num_text(self.lo)} to {_num_text(self.hi)}"  # type: ignore[arg-type]

    def allowed(self, kind: type) -> str:
        """What the field allows, as `prefix-lab keys` shows it."""
        if kind is bool:
            return "true | false"
        if kind is str and self.text:
            return f"text, at most {self.text:,} characters"
        if kind is str:
            return " | ".join(self.choices)
        off = " or off" if self.off else " or none" if self.unbounded else ""
        return f"{_num_text(self.lo)} to {_num_text(self.hi)}{off}"  # type: ignore[arg-type]


def _spec(default: Any, lo: float | None = None, hi: float | None = None, *, doc: str,
          choices: tuple[str, ...] = (), off: bool = False, page: tuple[float, float, float] | None = None,
          unbounded: bool = False, text: int = 0, reads: str = "") -> Any:
    return field(default=default, metadata={"spec": Spec(doc, lo, hi, choices, off, page, unbounded, text, reads)})


def _check_fields(obj: Any, prefix: str) -> None:
    """Check every declared field of a section on construction; store numbers in their field's type."""
    for name, spec, kind in _checks(type(obj)):  # type: ignore[arg-type]  # a class is hashable
        value = getattr(obj, name)
        checked = spec.check(prefix + name, kind, value)
        if checked is not value:
            object.__setattr__(obj, name, checked)


@functools.cache
def _checks(cls: type) -> tuple[tuple[str, "Spec", type], ...]:
    """(name, spec, value type) of each declared field of a section, in order: worked out once per class, as a
    page answer builds a scenario's sections several times."""
    return tuple((f.name, f.metadata["spec"], _kind(f)) for f in dataclasses.fields(cls) if "spec" in f.metadata)


# Which runs read a key, declared with it (a field's `reads`, else its section's `READS`); `model.reads.run_key`
# keeps the keys a run of the scenario reads, the page's memo key of a run.
READS = {
    "run": "every run",
    "serving": "serving mode's runs only (lab mode's replicas ignore it)",
    "link": "serving mode's runs, and lab mode's while `fleet.fetch` names this link",
    "none": "no run: an input of the article's arithmetic or of the prices, read when a figure is drawn",
}


class _Section:
    """A scenario section: checks its declared fields on construction, naming them `PREFIX + field`.

    A section names its keys' prefix and which runs read them (`READS` above) as class keywords:
    `class Money(_Section, prefix="money.", reads="none")`; `reads` defaults to every run.
    """

    __slots__ = ()
    PREFIX: ClassVar[str] = ""
    READS: ClassVar[str] = "run"  # which runs read its keys, unless a key says otherwise

    def __init_subclass__(cls, *, prefix: str = "", reads: str = "", **rest: object) -> None:
        super().__init_subclass__(**rest)
        if prefix:  # dataclass(slots=True) makes the class again without its keywords: it keeps these
            cls.PREFIX = prefix
        if reads:
            if reads not in READS:
                raise TypeError(f"section {cls.__name__}: reads={reads!r} is not one of {sorted(READS)}")
            cls.READS = reads

    def __post_init__(self) -> None:
        _check_fields(self, self.PREFIX)


def _kind(f: dataclasses.Field) -> type:
    """The value type behind a field's annotation (`float | None` is a float that may be off)."""
    if f.type == float | None:
        return float
    return int if f.type == int | None else f.type  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Traffic(_Section, prefix="traffic."):
    """Synthetic chat sessions: who arrives, with which prompt, saying how much."""

    # sessions and their turns
    session_rate: float = _spec(2.0, 0.01, 50.0, doc="new chat sessions per second (Poisson)", page=(0.25, 12, 0.25))
    turns_mean: float = _spec(4.0, 1.0, 20.0, doc="mean turns per session (geometric, at least 1)")
    gap_min_s: float = _spec(2.0, 0.0, 600.0, doc="shortest pause between a session's turns")
    gap_max_s: float = _spec(10.0, 0.0, 600.0, doc="longest pause between a session's turns")
    # system prompts: how many, how popular, how long
    system_prompts: int = _spec(6, 1, 1000, doc="distinct system prompts in normal traffic")
    surge_system_prompts: int = _spec(40, 1, 1000, doc="distinct system prompts during a tenant surge")
    zipf_s: float = _spec(1.0, 0.0, 4.0, doc="Zipf exponent of system prompt popularity (0 = uniform)")
    system_tokens: int = _spec(1500, 1, 100_000, doc="tokens in a system prompt")
    template_tokens: int = _spec(0, 0, 100_000, doc="tokens at the start of every system prompt that all of them "
                                                    "share (a common template; 0: none)")
    # per-request dynamic text (a timestamp) and turn sizes
    dynamic_at: int = _spec(200, 0, 100_000, doc="tokens into the system prompt where dynamic text goes")
    dynamic_tokens: int = _spec(20, 1, 10_000, doc="tokens of dynamic text (a timestamp)")
    user_min: int = _spec(40, 1, 100_000, doc="fewest tokens in a user turn")
    user_max: int = _spec(240, 1, 100_000, doc="most tokens in a user turn")
    answer_mean: int = _spec(220, 1, 100_000, doc="mean tokens in an answer")
    # the request source: the seed's chat sessions, or agent runs (model/sources/agents.py)
    kind: str = _spec("chat", choices=TRAFFIC_KINDS, doc="request source: chat sessions, agent runs or closed users")
    agent_rate: float = _spec(0.1, 0.001, 10.0, page=(0.02, 1, 0.02), doc="agent: new agent runs per second (Poisson)")
    agent_steps: float = _spec(20.0, 1.0, 200.0, doc="agent: mean calls per run (geometric, at least 1)")
    agent_tools_tokens: int = _spec(8000, 0, 100_000, doc="agent: tokens of tool definitions after the system "
                                                          "prompt, shared by every run with that system prompt")
    agent_result_tokens: int = _spec(900, 1, 100_000, doc="agent: mean tokens of a tool result, the part of each "
                                                          "call that is new (uniform, half to one and a half times)")
    agent_tool_s: float = _spec(4.0, 0.0, 3600.0, doc="agent: mean seconds between an answer and the next call "
                                                      "(uniform, half to one and a half times)")
    agent_fanout: int = _spec(0, 0, 64, page=(0, 16, 1),
                              doc="agent: sub-calls a fan-out step sends at once, sharing its prefix (0: no fan-out)")
    agent_fanout_every: int = _spec(5, 1, 200, doc="agent: every this many calls of a run is a fan-out")
    agent_fanout_tokens: int = _spec(4000, 1, 100_000, doc="agent: new tokens every sub-call of a fan-out shares "
                                                           "(the tool result they all read)")
    agent_branch_tokens: int = _spec(200, 1, 100_000, doc="agent: tokens of each sub-call's own instruction")
    agent_warm_first: bool = _spec(False, doc="agent: send one sub-call of a fan-out first and the rest at its first "
                                              "token, so they find the shared prefix cached (false: all at once)")
    # a closed population of users (model/sources/closed.py): each sends its next request when its answer is out
    users: int = _spec(30, 1, 1000, doc="closed: users, each sending its next request only once its last answer is out")
    think_s: float = _spec(0.0, 0.0, 3600.0, doc="closed: mean seconds a user thinks between an answer and its next "
                                                 "request (uniform, half to one and a half times; 0: at once)")
    ramp_s: float = _spec(10.0, 0.0, 3600.0, doc="closed: users start one after another, evenly over these seconds")
    prefix_tokens: int = _spec(4000, 1, 100_000, doc="closed: tokens of the system prompt that every user's "
                                                     "conversation starts with (shared by all users)")
    sharing_ratio: float = _spec(0.9, 0.01, 0.99, doc="closed: share of a conversation's first prompt that is the "
                                                      "shared prefix; every request adds a new tail of "
                                                      "prefix_tokens x (1 - ratio) / ratio tokens")
    context_tokens: int = _spec(16_384, 2, 10_000_000, doc="closed: most tokens a conversation holds (prompt and "
                                                           "answer); past it, the user starts a new conversation")


@dataclass(frozen=True, slots=True)
class Fleet(_Section, prefix="fleet."):
    """The replicas and what each one can hold and compute."""

    replicas: int = _spec(4, 1, 64, doc="number of replicas", page=(1, 16, 1))
    cache: bool = _spec(True, doc="prefix cache on or off")
    # Any size on the command line (a trace's reuse at 50,000 blocks is 3,125 GB), none for no limit;
    # the page keeps its slider's range.
    memory_gb: float = _spec(4.0, 0.0, 1e9, unbounded=True, page=(0.25, 16, 0.25),
                             doc="KV memory per replica in GB (2**30 bytes): the prefix cache's in lab mode; "
                                 "shared by running sequences and the cache in serving mode; none = no limit")
    prefill_tokens_per_s: float = _spec(10_000.0, 1.0, 10_000_000.0, doc="prefill speed of the lab preset")
    overhead_ms: float = _spec(15.0, 0.0, 10_000.0, doc="fixed cost of every request on the lab preset")
    # serving mode: continuous batching with decode, one KV budget per replica
    decode: bool = _spec(False, doc="serving mode: decode answers in a continuous batch (false: the lab's "
                                    "prefill-only model)")
    chunked_prefill: bool = _spec(True, reads="serving", doc="serving mode: split prefills to fit each step's token budget, "
                                            "beside the decodes (false: prefill first, decodes wait)")
    token_budget: int = _spec(2048, 16, 1_000_000, reads="serving", page=(256, 16384, 256),
                              doc="serving mode: tokens one step may compute (decode tokens count one each)")
    max_running: int = _spec(256, 1, 4096, reads="serving", doc="serving mode: most sequences a replica runs at once")
    # lab mode: moving a prefix's KV from a peer instead of recomputing it (model/studies/explainers.py)
    fetch: str = _spec("off", choices=FETCH_TIERS, doc="lab mode: fetch a prefix a peer holds over this link "
                                                       "(transfer.*) when that beats recomputing it; off = never")
    # serving mode: prefill and decode on separate replicas when both are above 0 (else co-located: each
    # replica does both). The page sets one key at a time, so one of them alone is not an error: it is noted.
    prefill_replicas: int = _spec(0, 0, 64, page=(0, 16, 1),
                                  doc="serving mode: replicas that only prefill, routed by router.kind; with "
                                      "decode_replicas they replace fleet.replicas (either 0: co-located)")
    decode_replicas: int = _spec(0, 0, 64, page=(0, 16, 1),
                                 doc="serving mode: replicas that only decode, each request going to the least "
                                     "loaded (either 0: co-located)")
    handoff: str = _spec("rdma", choices=HANDOFF_TIERS, doc="serving mode, split: the link a prompt's KV crosses "
                                                            "from its prefill replica to its decode replica "
                                                            "(transfer.*)")
    # serving mode: the order a replica admits its waiting requests in
    queue_order: str = _spec("fcfs", choices=QUEUE_ORDERS, doc="serving mode: admit waiting requests first come "
                                                               "first served, or longest cached prefix first")
    queue_guard_s: float = _spec(5.0, 0.0, 3600.0, reads="serving", page=(0, 30, 0.5),
                                 doc="serving mode, longest_prefix_first: a request waiting this long goes ahead "
                                     "of any that came after it")


@dataclass(frozen=True, slots=True)
class Routing(_Section, prefix="router."):
    """Which router picks the replica, and when cache-aware routing gives up on the cache."""

    kind: str = _spec("least_loaded", choices=KINDS, doc="routing policy")
    # None means never spill: cache-aware routing always takes the longest match.
    spill_threshold_s: float | None = _spec(1.0, 0.0, 3600.0, off=True, page=(0, 5, 0.1),
                                            doc="backlog gap (s) past which cache_aware spills; off = never")
    view: str = _spec("exact", choices=("exact", "approximate"),
                      doc="what routers know of the trees: the trees themselves, or their own memory of what they sent")
    view_ttl_s: float | None = _spec(120.0, 0.0, 86_400.0, off=True, page=(0, 120, 1),
                                     doc="approximate view: seconds after which the router forgets a prefix; off = never")
    load_factor: float = _spec(1.25, 1.0, 10.0, page=(1, 3, 0.05),
                               doc="bounded_hash: no replica holds more than ceil(this x (in flight + 1) / replicas)")
    load_multiple: float = _spec(2.0, 1.0, 100.0, page=(1, 6, 0.25),
                                 doc="prefix_load_aware: reroute past this many times the median in-flight count")
    # sglang and vllm_router: sgl-router 0.3.2's cache_aware settings, as its launcher gives them (model/routing/sglang.py)
    cache_threshold: float = _spec(0.3, 0.0, 1.0, page=(0, 1, 0.05),
                                   doc="sglang, vllm_router: follow its tree's best match only above this share of "
                                       "the prompt")
    balance_abs_threshold: int = _spec(64, 0, 100_000, page=(0, 256, 1),
                                       doc="sglang, vllm_router: in-flight spread (max - min) that may mean imbalance")
    balance_rel_threshold: float = _spec(1.5, 1.0, 100.0, page=(1, 4, 0.05),
                                         doc="sglang, vllm_router: imbalanced also needs max in flight above min "
                                             "times this")
    eviction_interval_s: int = _spec(60, 0, 86_400, doc="sglang, vllm_router: seconds between trims of its tree to "
                                                        "router.max_tree_chars (0: never)")
    max_tree_chars: int = _spec(2 ** 26, 1, 2 ** 40, doc="sglang, vllm_router: characters of routed text its tree "
                                                          "keeps per replica at each trim")


@dataclass(frozen=True, slots=True)
class Hardware(_Section, prefix="hardware."):
    """The model and GPU behind every replica: a preset, and any of its figures replaced ("off": the preset's)."""

    preset: str = _spec("lab", choices=tuple(PRESETS), doc="model and GPU (lab: the seed's figures; serving mode "
                                                           "uses article_14b_h100 in its place)")
    params_b: float | None = _spec(None, 0.01, 10_000.0, off=True, doc="model parameters, billions (off: the preset's)")
    layers: int | None = _spec(None, 1, 1000, off=True, doc="transformer layers (off: the preset's)")
    kv_heads: int | None = _spec(None, 1, 1000, off=True, doc="key-value heads per layer (off: the preset's)")
    head_dim: int | None = _spec(None, 1, 4096, off=True, doc="size of one attention head (off: the preset's)")
    bytes_per_value: float | None = _spec(None, 0.25, 8.0, off=True,
                                          doc="bytes per weight and per KV value, 2 for bf16 (off: the preset's)")
    tflops: float | None = _spec(None, 1.0, 100_000.0, off=True, doc="peak dense TFLOP/s of the GPU (off: the preset's)")
    utilisation: float | None = _spec(None, 0.01, 1.0, off=True,
                                      doc="share of peak FLOP/s a prefill reaches (off: the preset's)")
    hbm_tb_s: float | None = _spec(None, 0.01, 100.0, off=True, doc="memory bandwidth, TB/s (off: the preset's)")
    gpu_fit: str = _spec("", text=FIT_TEXT_MAX, doc="a GPU fitted to your own kernel profiles, as the text "
                                                    "prefix-lab profile fit writes (the CLI's --gpu-fit FIT.json "
                                                    "and the page's file picker fill it in); it prices the "
                                                    "measured presets' passes in place of their A100 or H100 "
                                                    "(empty: the preset's own GPU)")

    def __post_init__(self) -> None:
        _Section.__post_init__(self)
        if self.gpu_fit:
            try:
                fit_of_text(self.gpu_fit)
            except ValueError as exc:
                raise ScenarioError(f"hardware.gpu_fit: {exc}; make one with prefix-lab profile fit FILE.csv "
                                    "--gpu NAME --out FIT.json and pass the file with --gpu-fit FIT.json") from None


@dataclass(frozen=True, slots=True)
class Crossover(_Section, prefix="crossover.", reads="none"):
    """The article's crossover: an idle GPU recomputing a whole prompt, a warm one holding most of it behind a queue."""

    prompt_tokens: int = _spec(30_000, 1, 10_000_000, page=(1000, 100_000, 1000), doc="crossover: tokens in the prompt")
    new_tokens: int = _spec(900, 0, 10_000_000, page=(0, 30_000, 100),
                            doc="crossover: tokens of the prompt the warm GPU lacks (the rest it holds)")
    queued: int = _spec(3, 0, 1000, page=(0, 10, 1), doc="crossover: requests queued on the warm GPU")
    queued_tokens: int = _spec(8000, 0, 10_000_000, page=(0, 32_000, 500),
                               doc="crossover: uncached tokens of each queued request")


@dataclass(frozen=True, slots=True)
class Transfer(_Section, prefix="transfer.", reads="link"):
    """Moving a prefix's KV over a link instead of recomputing it: the article's example and each link's speed.

    A link's speed is read by the runs that fetch over it; the article's own example is read by no run.
    """

    prompt_tokens: int = _spec(30_000, 1, 10_000_000, page=(1000, 100_000, 1000), reads="none",
                               doc="transfer: tokens in the prompt")
    cached_tokens: int = _spec(29_000, 0, 10_000_000, page=(0, 100_000, 1000), reads="none",
                               doc="transfer: tokens of it whose KV is moved (a peer holds them)")
    rdma_gbps: float = _spec(800.0, 1.0, 100_000.0, page=(50, 1600, 50), doc="transfer: RDMA fabric, gigabits per second")
    nvme_gb_s: float = _spec(7.0, 0.01, 10_000.0, page=(0.5, 28, 0.5),
                             doc="transfer: NVMe drive, GB (10**9 bytes) per second")
    host_gb_s: float = _spec(64.0, 0.01, 10_000.0, page=(4, 128, 4),
                             doc="transfer: host memory over PCIe 5.0 x16, GB (10**9 bytes) per second each way")


@dataclass(frozen=True, slots=True)
class Money(_Section, prefix="money.", reads="none"):
    """Prices: a GPU-hour for the fleet, and an API's input price with its prompt-caching multiples."""

    gpu_usd_per_hour: float = _spec(3.0, 0.0, 1000.0, page=(0.25, 12, 0.25),
                                    doc="money: US dollars per GPU-hour (set your own)")
    input_usd_per_mtok: float = _spec(2.0, 0.0, 1000.0, doc="money: API input price, US dollars per million tokens")
    read_multiple: float = _spec(0.1, 0.0, 10.0, doc="money: a cache read's price as a multiple of the input price")
    write_multiple: float = _spec(1.25, 0.0, 10.0, doc="money: a cache write's price as a multiple of the input price")
    lifetime_s: float = _spec(300.0, 0.0, 86_400.0, page=(0, 3600, 60),
                              doc="money: seconds a cache entry lives after its last use")
    calls: int = _spec(20, 1, 100_000, page=(1, 100, 1),
                       doc="money: calls in an agent run, each repeating the previous prompt")
    prompt_tokens: int = _spec(30_000, 1, 10_000_000, doc="money: tokens in each call's prompt")
    new_tokens: int = _spec(900, 0, 10_000_000, doc="money: tokens of each call's prompt new since the call before")
    gap_s: float = _spec(4.0, 0.0, 86_400.0, page=(0, 900, 5), doc="money: seconds between one call and the next")
    branches: int = _spec(10, 1, 1000, doc="money: sub-calls of a fan-out, all sharing a prompt of "
                                           "money.prompt_tokens")


@dataclass(frozen=True, slots=True)
class Roofline(_Section, prefix="roofline.", reads="none"):
    """The roofline explainer's inputs: a decode step's batch and a prefill's length."""

    batch: int = _spec(1, 1, 100_000, page=(1, 512, 1), doc="roofline: sequences in one decode step")
    prefill_tokens: int = _spec(30_000, 1, 10_000_000, page=(100, 100_000, 100), doc="roofline: tokens in one prefill")


@dataclass(frozen=True, slots=True)
class Slo(_Section, prefix="slo."):
    """Service-level objectives a serving run is measured against: shares of requests that meet each."""

    # The article's replay capped TTFT at 30 s; at this lab's scale every setup meets that, so the default
    # is tighter (see README, "Prefill and decode").
    ttft_ms: float = _spec(1000.0, 1.0, 3_600_000.0, page=(100, 30_000, 100),
                           doc="time to first token a request should get, at most (ms)")
    tbt_ms: float = _spec(100.0, 1.0, 600_000.0, page=(10, 500, 5),
                          doc="longest wait between two of a request's tokens, at most (ms)")


# Event bounds, declared once: every way in (text, JSON, code) meets them on construction.
EVENT_MAX_DURATION_S = 7200.0
BURST_FACTOR = (1.0, 20.0)


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happens during the run, from `at_s` on."""

    kind: str  # "timestamp" | "surge" | "burst"
    at_s: float
    duration_s: float = 0.0  # surge and burst only; a timestamp stays to the end
    factor: float = 1.0  # burst only: arrival rate multiplier

    def __post_init__(self) -> None:
        if self.kind not in EVENT_KINDS:
            raise ScenarioError(f"events: {_show(self.kind)} is not an event kind; use one of {', '.join(EVENT_KINDS)}")
        for name in ("at_s", "duration_s", "factor"):
            v = getattr(self, name)
            if not _is_number(v) or abs(v) > 1e15:
                raise ScenarioError(f"events ({self.kind}): {name} {_show(v)} is not a number in range")
            object.__setattr__(self, name, float(v))
        where = f"events ({self.to_text()})"
        if self.at_s < 0:
            raise ScenarioError(f"{where}: starts at {_num_text(self.at_s)} s; use a start of 0 or more")
        if self.kind == "timestamp" and (self.duration_s or self.factor != 1.0):
            raise ScenarioError(f"{where}: a timestamp takes no duration or factor")
        if self.kind != "timestamp" and not 0.0 < self.duration_s <= EVENT_MAX_DURATION_S:
            raise ScenarioError(f"{where}: duration {_num_text(self.duration_s)} s; use a duration above 0 and "
                                f"at most {_num_text(EVENT_MAX_DURATION_S)} s")
        if self.kind == "surge" and self.factor != 1.0:
            raise ScenarioError(f"{where}: a surge takes no factor")
        lo, hi = BURST_FACTOR
        if self.kind == "burst" and not lo <= self.factor <= hi:
            raise ScenarioError(f"{where}: factor {_num_text(self.factor)}; use a factor from {_num_text(lo)} to {_num_text(hi)}")

    def ends_s(self) -> float:
        return math.inf if self.kind == "timestamp" else self.at_s + self.duration_s

    def to_text(self) -> str:
        at = _num_text(self.at_s)
        if self.kind == "timestamp":
            return f"timestamp@{at}"
        text = f"{self.kind}@{at}+{_num_text(self.duration_s)}"
        return text + f"x{_num_text(self.factor)}" if self.kind == "burst" else text


@dataclass(frozen=True, slots=True)
class Scenario:
    """One simulated run: traffic, fleet, router, events, all from one seed."""

    seed: int = _spec(1, 0, 2**63 - 1, doc="seed of every random stream", page=(0, 2**31 - 1, 1))
    duration_s: float = _spec(180.0, 1.0, 604_800.0, doc="seconds during which requests arrive")
    dynamic_text: str = _spec("none", choices=DYNAMIC_TEXT, doc="where per-request text sits in the prompt")
    traffic: Traffic = field(default_factory=Traffic)
    fleet: Fleet = field(default_factory=Fleet)
    router: Routing = field(default_factory=Routing)
    hardware: Hardware = field(default_factory=Hardware)
    crossover: Crossover = field(default_factory=Crossover)
    transfer: Transfer = field(default_factory=Transfer)
    money: Money = field(default_factory=Money)
    roofline: Roofline = field(default_factory=Roofline)
    slo: Slo = field(default_factory=Slo)
    events: tuple[Event, ...] = ()

    def __post_init__(self) -> None:
        _check_fields(self, "")
        _check(self)

    @property
    def serving(self) -> bool:
        """Serving mode (`fleet.decode`): replicas decode each answer in batches. Else lab mode, the seed's model."""
        return self.fleet.decode

    def in_serving_mode(self, values: dict[str, Any] | None = None) -> "Scenario":
        """A copy in serving mode, with dotted keys set to typed values too (a study that runs both ways)."""
        return self.with_values({"fleet.decode": True, **(values or {})})

    def in_lab_mode(self, values: dict[str, Any] | None = None) -> "Scenario":
        """A copy in lab mode, with dotted keys set to typed values too."""
        return self.with_values({"fleet.decode": False, **(values or {})})

    @property
    def split(self) -> bool:
        """Serving mode with prefill and decode on separate replicas (`fleet.prefill_replicas`, `decode_replicas`)."""
        f = self.fleet
        return self.serving and f.prefill_replicas > 0 and f.decode_replicas > 0

    @property
    def gpus(self) -> int:
        """GPUs the fleet uses: prefill + decode replicas when split, else `fleet.replicas`."""
        f = self.fleet
        return f.prefill_replicas + f.decode_replicas if self.split else f.replicas

    # -- in -------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> "Scenario":
        """Build from nested JSON data; missing fields take their defaults."""
        return _build(cls, data, "")

    def with_values(self, values: dict[str, Any]) -> "Scenario":
        """A copy with dotted keys set to typed values (as JSON would give them)."""
        data = self.to_dict()
        for key, value in values.items():
            _set_dotted(data, key, value)
        return Scenario.from_dict(data)

    def with_text(self, values: dict[str, str]) -> "Scenario":
        """A copy with dotted keys set from text (`--set` and URL values)."""
        return self.with_values({key: parse_text(key, text) for key, text in values.items()})

    # -- out ------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Nested JSON-ready data; `Scenario.from_dict(s.to_dict()) == s`."""
        return _as_dict(self)

    def to_text(self) -> dict[str, str]:
        """Every dotted key with its text value, in a fixed order."""
        return {key: format_text(key, self.get(key)) for key in KEYS}

    def get(self, key: str) -> Any:
        """The value at a dotted key."""
        obj: Any = self
        for part in key.split("."):
            obj = getattr(obj, part)
        return obj

    def events_of(self, kind: str) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.kind == kind)


# -- keys and text --------------------------------------------------------

_SECTIONS = {"traffic": Traffic, "fleet": Fleet, "router": Routing, "hardware": Hardware, "crossover": Crossover,
             "transfer": Transfer, "money": Money, "roofline": Roofline, "slo": Slo}


def _keys() -> tuple[str, ...]:
    keys = []
    for f in dataclasses.fields(Scenario):
        if f.name in _SECTIONS:
            keys += [f"{f.name}.{g.name}" for g in dataclasses.fields(_SECTIONS[f.name])]
        else:
            keys.append(f.name)
    return tuple(keys)


KEYS: tuple[str, ...] = _keys()
EVENTS_SPEC = Spec("what happens during the run")


@functools.cache
def default_text() -> MappingProxyType[str, str]:
    """`Scenario().to_text()`, worked out once (every URL the page writes is compared with it), read-only."""
    return MappingProxyType(Scenario().to_text())


def describe() -> list[dict[str, Any]]:
    """Every dotted key with its default, what it allows, the page's range and what it means."""
    out = []
    defaults = default_text()
    for key in KEYS:
        if key == "events":
            out.append({"key": key, "default": "", "allowed": "timestamp@T, surge@T+D, burst@T+DxF, comma-separated",
                        "page": "", "meaning": EVENTS_SPEC.doc})
            continue
        f = field_of(key)
        spec: Spec = f.metadata["spec"]
        page = "" if spec.page is None else "{} to {}, step {}".format(*map(_num_text, spec.page))
        out.append({"key": key, "default": defaults[key], "allowed": spec.allowed(_kind(f)), "page": page,
                    "meaning": spec.doc})
    return out


@functools.cache
def field_of(key: str) -> dataclasses.Field:
    """The dataclass field behind a dotted key, or a ScenarioError naming the known keys (found once per key)."""
    if key not in KEYS:
        near = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.6)
        hint = f"did you mean {near[0]}?" if near else "known keys: " + ", ".join(KEYS)
        raise ScenarioError(f"{key}: unknown key; {hint}")
    section, _, name = key.rpartition(".")
    cls = _SECTIONS[section] if section else Scenario
    return next(f for f in dataclasses.fields(cls) if f.name == name)


def reads_of(key: str) -> str:
    """Which runs read a dotted key: one of `READS` (its own declaration, else its section's)."""
    if key == "events":
        return "run"
    own = spec_of(key).reads
    section, _, _ = key.rpartition(".")
    reads: str = getattr(_SECTIONS[section], "READS") if section else "run"  # noqa: B009 -- a ClassVar of each section
    return own or reads


def spec_of(key: str) -> Spec:
    """The declaration of a dotted key (`events` included)."""
    return EVENTS_SPEC if key == "events" else field_of(key).metadata["spec"]


def parse_text(key: str, text: str) -> Any:
    """Turn a text value into the JSON-like value the key takes."""
    f = field_of(key)
    text = text.strip()
    if key == "events":
        return [_as_dict(e) for e in parse_events(text)]
    kind, spec = _kind(f), f.metadata["spec"]
    if kind is bool:
        lowered = text.lower()
        if lowered in ("true", "on", "yes", "1"):
            return True
        if lowered in ("false", "off", "no", "0"):
            return False
        raise ScenarioError(f"{key}: {text!r} is not a switch; use true or false")
    if kind in (int, float):
        if spec.off and text.lower() in ("off", "none", "null", "never"):
            return None
        if spec.unbounded and text.lower() == "none":
            return None
        try:
            number = float(text)
        except ValueError:
            extra = " or off" if spec.off else ""
            raise ScenarioError(f"{key}: {text!r} is not a number; use a number{extra}") from None
        return int(number) if kind is int and number.is_integer() else number
    return text


def format_text(key: str, value: Any) -> str:
    """The text form of a value at a dotted key; `parse_text` reads it back."""
    if key == "events":
        return ",".join(e.to_text() for e in value)
    if value is None:
        return "off"
    if value == math.inf:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _num_text(value)
    return str(value)


def _num_text(x: float) -> str:
    if isinstance(x, int):
        return str(x)
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


_EVENT_TEXT = re.compile(
    r"^(?P<kind>[a-z]+)@(?P<at>[0-9.]+)(?:\+(?P<dur>[0-9.]+))?(?:x(?P<factor>[0-9.]+))?$")


def parse_events(text: str) -> tuple[Event, ...]:
    """Read `timestamp@120,surge@60+90,burst@30+20x3` (empty text: no events)."""
    events = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = _EVENT_TEXT.match(part)
        if not m:
            raise ScenarioError(
                f"events: {part!r} is not an event; write timestamp@SECONDS, "
                "surge@START+DURATION or burst@START+DURATIONxFACTOR")
        try:
            at = float(m["at"])
            dur = float(m["dur"]) if m["dur"] else 0.0
            factor = float(m["factor"]) if m["factor"] else 1.0
        except ValueError:
            raise ScenarioError(f"events: {part!r} has a malformed number") from None
        kind = m["kind"]
        if kind not in EVENT_KINDS:
            raise ScenarioError(f"events: {part!r} is not an event; its kind must be one of {', '.join(EVENT_KINDS)}")
        if kind == "timestamp" and (m["dur"] or m["factor"]):
            raise ScenarioError(f"events: {part!r}: a timestamp takes only a start, as timestamp@120")
        if kind == "surge" and m["factor"]:
            raise ScenarioError(f"events: {part!r}: a surge takes a start and a duration, as surge@60+90")
        events.append(Event(kind, at, dur, factor))
    return tuple(events)


# -- building and checking ------------------------------------------------

def _as_dict(obj: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            value = _as_dict(value)
        elif isinstance(value, tuple):
            value = [_as_dict(v) for v in value]
        elif value == math.inf:  # no limit: JSON has no infinity, null reads back as one
            value = None
        out[f.name] = value
    return out


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    field_of(key)  # unknown keys fail here, with a hint
    *path, name = key.split(".")
    target = data
    for part in path:
        target = target.setdefault(part, {})
    target[name] = value


def _build(cls: type, data: Any, prefix: str) -> Any:
    """Construct `cls` from JSON data: unknown and missing keys are named; values are checked by `cls` itself."""
    where = prefix.rstrip(".") or "scenario"
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected an object of fields, got {_show(data)}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names, key=str)
    if unknown:
        raise ScenarioError(f"{prefix}{unknown[0]}: unknown key; known here: {', '.join(names_in_order(cls))}")
    kwargs = dict(data)
    if cls is Scenario:
        for name, section in _SECTIONS.items():
            if name in kwargs:
                kwargs[name] = _build(section, kwargs[name], name + ".")
        if "events" in kwargs:
            kwargs["events"] = _build_events(kwargs["events"])
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field missing, as an event without `at_s`
        raise ScenarioError(f"{where}: {exc}") from None


def names_in_order(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _build_events(value: Any) -> tuple[Event, ...]:
    if isinstance(value, str):
        return parse_events(value)
    if not isinstance(value, (list, tuple)):
        raise ScenarioError(f"events: expected a list of events, got {_show(value)}")
    events = []
    for i, item in enumerate(value):
        if isinstance(item, Event):
            events.append(item)
            continue
        if not isinstance(item, dict):
            raise ScenarioError(f"events[{i}]: expected an object like {{\"kind\": \"burst\", \"at_s\": 30}}, got {_show(item)}")
        unknown = sorted(set(item) - {"kind", "at_s", "duration_s", "factor"}, key=str)
        if unknown:
            raise ScenarioError(f"events[{i}].{unknown[0]}: unknown key; known: kind, at_s, duration_s, factor")
        for need in ("kind", "at_s"):
            if need not in item:
                raise ScenarioError(f"events[{i}].{need}: missing; every event needs kind and at_s")
        try:
            events.append(Event(**item))
        except ScenarioError as exc:
            raise ScenarioError(f"events[{i}]{str(exc).removeprefix('events')}") from None
    return tuple(events)


def _check(s: Scenario) -> None:
    """Rules that tie fields together; each field checked itself on construction."""
    for name, section in _SECTIONS.items():
        if not isinstance(getattr(s, name), section):
            raise ScenarioError(f"{name}: expected a {section.__name__}, got {_show(getattr(s, name))}")
    if not isinstance(s.events, tuple) or not all(isinstance(e, Event) for e in s.events):
        raise ScenarioError("events: expected a tuple of Event values")
    t = s.traffic
    if t.gap_min_s > t.gap_max_s:
        raise ScenarioError(f"traffic.gap_min_s: {_num_text(t.gap_min_s)} is above traffic.gap_max_s ({_num_text(t.gap_max_s)}); make the minimum the smaller")
    if t.user_min > t.user_max:
        raise ScenarioError(f"traffic.user_min: {t.user_min} is above traffic.user_max ({t.user_max}); make the minimum the smaller")
    if t.template_tokens > t.system_tokens:
        raise ScenarioError(f"traffic.template_tokens: {t.template_tokens} is more than a whole system prompt "
                            f"({t.system_tokens} tokens); use at most traffic.system_tokens")
    if t.dynamic_at > t.system_tokens:
        raise ScenarioError(f"traffic.dynamic_at: {t.dynamic_at} is past the end of the system prompt ({t.system_tokens} tokens)")
    if t.kind == "closed":
        first = t.prefix_tokens + closed_tail(t) + t.answer_mean + t.answer_mean // 2
        if first > t.context_tokens:
            raise ScenarioError(f"traffic.context_tokens: {t.context_tokens} cannot hold a conversation's first "
                                f"prompt and its longest answer ({first} tokens); raise it or shorten "
                                "traffic.prefix_tokens")
    f = s.fleet
    most = spec_of("fleet.replicas").hi
    if f.prefill_replicas and f.decode_replicas and f.prefill_replicas + f.decode_replicas > most:  # type: ignore[operator]
        raise ScenarioError(f"fleet.decode_replicas: {f.prefill_replicas} prefill and {f.decode_replicas} decode "
                            f"replicas make {f.prefill_replicas + f.decode_replicas} GPUs, more than the lab's "
                            f"{_num_text(most)}; use fewer")  # type: ignore[arg-type]
    if s.serving and f.token_budget < f.max_running:
        raise ScenarioError(f"fleet.token_budget: {f.token_budget} is below fleet.max_running ({f.max_running}); "
                            "every running sequence needs one token of it per step")
    for key, part, whole in (("crossover.new_tokens", s.crossover.new_tokens, s.crossover.prompt_tokens),
                             ("transfer.cached_tokens", s.transfer.cached_tokens, s.transfer.prompt_tokens),
                             ("money.new_tokens", s.money.new_tokens, s.money.prompt_tokens)):
        if part > whole:
            raise ScenarioError(f"{key}: {part} is more than {key.split('.')[0]}.prompt_tokens ({whole}); "
                                "it is a part of the prompt")
    if len(s.events) > MAX_EVENTS:
        raise ScenarioError(f"events: {len(s.events)} events; use at most {MAX_EVENTS}")
    for i, e in enumerate(s.events):
        if e.at_s >= s.duration_s:
            raise ScenarioError(f"events[{i}] ({e.to_text()}): starts at {_num_text(e.at_s)} s; use a start from 0 "
                                f"to below duration_s ({_num_text(s.duration_s)})")
    ordered = tuple(sorted(s.events, key=lambda e: (e.at_s, e.kind, e.duration_s, e.factor)))
    if ordered != s.events:  # events are a set in time: keep one canonical order
        object.__setattr__(s, "events", ordered)


def closed_tail(t: Traffic) -> int:
    """Tokens of new text in every closed user's request: prefix x (1 - ratio) / ratio, at least one."""
    return max(1, round(t.prefix_tokens * (1.0 - t.sharing_ratio) / t.sharing_ratio))


def _is_number(value: Any) -> bool:
    """A finite int or float (not a bool); ints of any size, which floats cannot hold, count."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)


def _show(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return "a number too large to use"
    if isinstance(value, float):
        return _num_text(value) if math.isfinite(value) else repr(value)
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 40 else text[:37] + "..."
