"""prefix-lab's simulation: seeded chat traffic, or a replayed trace, on a fleet of prefix-caching replicas.

`simulate(Scenario())` runs the lab's default scenario; `fleet.decode` turns on
serving mode (batched decode under one KV budget, on a hardware profile from
`hardware.*`); `replay(scenario, open_trace)` sends a trace's requests instead
of synthetic chat (model/sources/trace.py). `traffic.kind=agent` sends agent runs instead of chats,
`traffic.kind=closed` a fixed population of users who wait for their answers (model/sources/closed.py);
`scenario_of(name)` builds a named scenario (model/presets.py). The explainers (crossover, transfer,
money, roofline) are pure functions of a profile. Standard library only,
no I/O, no clocks, no global random state: it runs the same in CPython and
Pyodide, and the same scenario always gives the same result.

Other packages import from here only: these names are the model's public surface.
"""

from model.config import (
    BURST_FACTOR,
    EVENT_MAX_DURATION_S,
    KEYS,
    MAX_EVENTS,
    Event,
    Scenario,
    ScenarioError,
    default_text,
    describe,
    format_text,
    parse_events,
    spec_of,
)
from model.gpus.gpu import (
    ELEMENTWISE,
    FLASH_ATTENTION_2,
    GEMMS,
    PER_PASS,
    GpuFit,
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
from model.gpus.gpufits import FITS
from model.gpus.hardware import PRESETS, nearest_gpu
from model.metrics import Result, rounded, rounded_all
from model.presets import NAMED, scenario_of
from model.reads import run_key
from model.requests import sent_at_most
from model.routing.policies import ROUTERS
from model.routing.sglang import SGLangRouter, VLLMRouterRule
from model.run import simulate
from model.sources.agents import fanout_figures
from model.sources.trace import (
    BLOCK_TOKENS,
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
from model.sources.traffic import Request, TooManyRequests, generate, traffic_key
from model.studies.article import RACE, fanout_race, run_money
from model.studies.explainers import (
    TIERS,
    api_calls,
    crossover,
    crossover_of,
    explainer_profile,
    idle_ttft_s,
    money_of,
    prices_of,
    transfer_of,
    warm_ttft_s,
)
from model.studies.hindsight import explain
from model.studies.locality import locality_comparison
from model.studies.queueorder import queue_compare
from model.studies.roofline import intensity, roofline_of
from model.studies.split import SLO_SHARE, split_compare
from model.studies.stall import stall_demo, stall_of
from model.studies.tree import TreeSnapshot, simulate_with_trees, tree_at

__all__ = [
    "BURST_FACTOR", "EVENT_MAX_DURATION_S", "KEYS", "MAX_EVENTS", "PRESETS", "ROUTERS", "Event",
    "Request", "Result", "Scenario", "ScenarioError", "TooManyRequests",
    "default_text", "describe", "explain", "format_text", "generate", "nearest_gpu", "parse_events", "run_key", "simulate", "spec_of",
    "traffic_key", "sent_at_most",
    # `round(x, digits)` to the bit, cheaper: for the figures that round thousands of numbers
    "rounded",
    "rounded_all",
    # named scenarios shipped with the project, and the KV-locality note's comparison run on one
    "NAMED", "locality_comparison", "scenario_of",
    # a request source: traces
    "BLOCK_TOKENS", "TraceError", "TraceInfo", "read_trace", "replay", "replay_scenario", "scan_trace",
    "trace_lines", "trace_reuse", "TraceReuse",
    # the article's arithmetic (model/studies/explainers.py) and its figures that need a run (model/studies/article.py)
    "RACE", "TIERS", "api_calls", "crossover", "crossover_of", "explainer_profile", "fanout_figures", "fanout_race",
    "idle_ttft_s", "money_of", "prices_of", "run_money", "transfer_of", "warm_ttft_s",
    # prefill and decode (model/studies/roofline.py, model/studies/split.py)
    "SLO_SHARE", "queue_compare", "roofline_of", "split_compare", "stall_demo", "stall_of",
    # sgl-router 0.3.2's rule on its own state, for replaying its recorded decisions (model/routing/sglang.py)
    "SGLangRouter", "VLLMRouterRule",
    # measured GPUs: a layer priced from fitted kernel coefficients (model/gpus/gpu.py, model/gpus/gpufits.py)
    "ELEMENTWISE", "FITS", "FLASH_ATTENTION_2", "GEMMS", "PER_PASS", "GpuFit", "Shape", "elementwise_ops",
    "fit_of_text", "fit_problem", "fit_text", "gemm_ops", "intensity", "layer_flops", "layer_s", "lm_head_s",
    # one replica's radix tree at a moment of a run (model/studies/tree.py)
    "TreeSnapshot", "simulate_with_trees", "tree_at",
]
