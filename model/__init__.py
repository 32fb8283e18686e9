"""prefix-lab's simulation: seeded chat traffic, or a replayed trace, on a fleet of prefix-caching replicas.

`simulate(Scenario())` runs the lab's default scenario; `fleet.decode` turns on
serving mode (batched decode under one KV budget, on a hardware profile from
`hardware.*`); `replay(scenario, open_trace)` sends a trace's requests instead
of synthetic chat (model/trace.py). `traffic.kind=agent` sends agent runs instead of chats,
`traffic.kind=closed` a fixed population of users who wait for their answers (model/closed.py);
`scenario_of(name)` builds a named scenario (model/presets.py). The explainers (crossover, transfer,
money, roofline) are pure functions of a profile. Standard library only,
no I/O, no clocks, no global random state: it runs the same in CPython and
Pyodide, and the same scenario always gives the same result.

Other packages import from here only: these names are the model's public surface.
"""

from .agents import fanout_figures
from .article import RACE, fanout_race, run_money
from .config import (
    BURST_FACTOR,
    EVENT_MAX_DURATION_S,
    KEYS,
    MAX_EVENTS,
    Event,
    Routing,
    Scenario,
    ScenarioError,
    describe,
    format_text,
    parse_events,
    spec_of,
)
from .engine import Run, simulate
from .explainers import (
    TIERS,
    api_calls,
    api_fanout,
    crossover,
    crossover_of,
    explainer_profile,
    fetch_plan,
    gpu_usd_per_month,
    idle_ttft_s,
    money_of,
    prices_of,
    transfer,
    transfer_of,
    warm_ttft_s,
)
from .gpu import (
    ELEMENTWISE,
    FLASH_ATTENTION_2,
    GEMMS,
    PER_PASS,
    GpuFit,
    Measured,
    Shape,
    elementwise_ops,
    fit_of_text,
    fit_problem,
    fit_text,
    gemm_ops,
    layer_flops,
    layer_s,
    lm_head_s,
)
from .gpufits import FITS
from .hardware import PRESETS, build, kv_room_gb, profile_of
from .hindsight import explain
from .locality import locality_comparison
from .metrics import Result, percentile
from .presets import NAMED, scenario_of
from .queueorder import queue_compare, queue_figures
from .radix import RadixTree
from .replica import Replica
from .requests import sent_at_most
from .rng import stream
from .roofline import intensity, roofline_of
from .routers import ROUTERS, View
from .serving_run import ServingRun
from .sglang import SGLangRouter, VLLMRouterRule
from .split import SLO_SHARE, split_compare, split_figures
from .stall import stall_demo, stall_of
from .trace import (
    BLOCK_TOKENS,
    MAX_LINE_BYTES,
    TraceError,
    TraceInfo,
    TraceReuse,
    read_trace,
    replay,
    replay_scenario,
    scan_trace,
    trace_lines,
    trace_reuse,
)
from .traffic import Request, TooManyRequests, generate, traffic_key
from .tree import TreeSnapshot, simulate_with_trees, tree_at

__all__ = [
    "BURST_FACTOR", "EVENT_MAX_DURATION_S", "KEYS", "MAX_EVENTS", "PRESETS", "ROUTERS", "Event", "RadixTree", "Replica",
    "Request", "Result", "Routing", "Run", "Scenario", "ScenarioError", "ServingRun", "TooManyRequests", "View", "build",
    "describe", "explain", "format_text", "generate", "parse_events", "percentile", "profile_of", "simulate", "spec_of",
    "stream", "traffic_key", "sent_at_most",
    # named scenarios shipped with the project, and the KV-locality note's comparison run on one
    "NAMED", "kv_room_gb", "locality_comparison", "scenario_of",
    # a request source: traces
    "BLOCK_TOKENS", "MAX_LINE_BYTES", "TraceError", "TraceInfo", "read_trace", "replay", "replay_scenario", "scan_trace",
    "trace_lines", "trace_reuse", "TraceReuse",
    # the article's arithmetic (model/explainers.py) and its figures that need a run (model/article.py)
    "RACE", "TIERS", "api_calls", "api_fanout", "crossover", "crossover_of", "explainer_profile", "fanout_figures", "fanout_race", "fetch_plan",
    "gpu_usd_per_month", "idle_ttft_s", "money_of", "prices_of", "run_money", "transfer", "transfer_of", "warm_ttft_s",
    # prefill and decode (model/roofline.py, model/split.py)
    "SLO_SHARE", "queue_compare", "queue_figures", "roofline_of", "split_compare", "split_figures", "stall_demo", "stall_of",
    # sgl-router 0.3.2's rule on its own state, for replaying its recorded decisions (model/sglang.py)
    "SGLangRouter", "VLLMRouterRule",
    # measured GPUs: a layer priced from fitted kernel coefficients (model/gpu.py, model/gpufits.py)
    "ELEMENTWISE", "FITS", "FLASH_ATTENTION_2", "GEMMS", "PER_PASS", "GpuFit", "Measured", "Shape", "elementwise_ops",
    "fit_of_text", "fit_problem", "fit_text", "gemm_ops", "intensity", "layer_flops", "layer_s", "lm_head_s",
    # one replica's radix tree at a moment of a run (model/tree.py)
    "TreeSnapshot", "simulate_with_trees", "tree_at",
]
