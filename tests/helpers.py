"""Small builders shared by the tests, and where the tests find the project's files."""

import json
from pathlib import Path

from model import Request, Scenario, ScenarioError, spec_of
from model.engines.replica import Replica

ROOT = Path(__file__).resolve().parent.parent  # the checkout
DATA = ROOT / "tests" / "data"
TRACES = ROOT.parent / "shared" / "traces"  # the shared folder beside the checkout


def request(rid, keys, sizes=None, system_prompt=0, arrival_s=0.0, session=0, turn=0):
    """A hand-built request over segment `keys` (100 tokens each unless `sizes`)."""
    keys = tuple(keys)
    sizes = tuple(sizes) if sizes is not None else (100,) * len(keys)
    return Request(rid, arrival_s, session, turn, system_prompt, keys, sizes, sizes[-1], 10,
                   ("answer", rid), sum(sizes), sum(sizes) - sizes[-1], f"prompt/{system_prompt}")


def fleet(n, capacity=10_000, cache=True, overhead_s=0.015, tokens_per_s=10_000.0):
    return [Replica(i, capacity, cache, overhead_s, tokens_per_s) for i in range(n)]


def tree_nodes(tree, stamps=True):
    """Each node of a radix tree by its path, with its sizes, locks and (with `stamps`) its recency stamp, sorted:
    what two trees built two ways must agree on."""
    out, stack = [], [((), tree.root)]
    while stack:
        path, node = stack.pop()
        for child in node.children.values():
            here = path + child.keys
            out.append((here, child.sizes, child.lock_ref) + ((child.stamp,) if stamps else ()))
            stack.append((here, child))
    return sorted(out, key=repr)


def busy(replica, seconds, now=0.0):
    """Make `replica` look `seconds` busy at `now`."""
    replica.busy_until = now + seconds


# Lab mode's result as the seed's model defined it (2026-11-30). Golden digests cover these fields
# only, so that later issues may add keys and result fields (with goldens of their own) while
# every figure and record lab mode gave stays pinned.
LAB_KEYS = ("seed", "duration_s", "dynamic_text", "traffic.session_rate", "traffic.turns_mean", "traffic.gap_min_s",
            "traffic.gap_max_s", "traffic.system_prompts", "traffic.surge_system_prompts", "traffic.zipf_s",
            "traffic.system_tokens", "traffic.dynamic_at", "traffic.dynamic_tokens", "traffic.user_min",
            "traffic.user_max", "traffic.answer_mean", "fleet.replicas", "fleet.cache", "fleet.memory_gb",
            "fleet.prefill_tokens_per_s", "fleet.overhead_ms", "router.kind", "router.spill_threshold_s", "events")
LAB_SUMMARY = ("requests", "hit_rate", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "ttft_mean_ms", "throughput_rps",
               "makespan_s", "prefill_gpu_s", "recompute_gpu_s")
LAB_REPLICA = ("index", "requests", "hit_rate", "utilisation", "prefill_gpu_s")
LAB_SERIES = ("bin_s", "start_s", "requests", "hit_rate", "ttft_p50_ms", "ttft_p99_ms", "replica_load",
              "replica_backlog_s")
LAB_RECORD = ("arrival_s", "session", "turn", "system_prompt", "replica", "prompt_tokens", "user_tokens",
              "answer_tokens", "cached_tokens", "recomputed_tokens", "queue_ms", "prefill_ms", "ttft_ms")


def everything(result):
    """A result as one string: all of its JSON and every request record, byte for byte."""
    return json.dumps(result.to_dict(), sort_keys=True) + "".join(json.dumps(r.to_dict()) for r in result.records)


def canonical(result):
    """A result as one string: lab mode's fields and every request record, byte for byte."""
    text = result.scenario.to_text()
    data = result.to_dict()
    frozen = {
        "scenario": {key: text[key] for key in LAB_KEYS},
        **{key: data[key] for key in LAB_SUMMARY},
        "replicas": [{key: r[key] for key in LAB_REPLICA} for r in data["replicas"]],
        "series": {key: data["series"][key] for key in LAB_SERIES},
    }
    records = "".join(json.dumps({key: getattr(r, key) for key in LAB_RECORD}) + "\n" for r in result.records)
    return json.dumps(frozen, sort_keys=True) + records


def asset(site, name):
    """The served path of a site file known by its plain name (`worker.js`, `pyodide/pyodide.asm.wasm`):
    the content-hashed name the build gave it (build.json's `assets`)."""
    names = json.loads((Path(site) / "build.json").read_text())["assets"]
    if name in names:
        return names[name]
    folder, _, rest = name.partition("/")
    return names[folder + "/"] + rest


def another_value(scenario: Scenario, key: str) -> Scenario | None:
    """`scenario` with `key` set to some other value it may hold, or None if none is accepted."""
    spec, now = spec_of(key), scenario.to_text()[key]
    tries = ["surge@10+5"] if key == "events" else [*spec.choices, "true", "false", "off", spec.lo, spec.hi, 1, 3]
    for value in tries:
        if value is None or str(value) == now:
            continue
        try:
            changed = scenario.with_text({key: str(value)})
        except ScenarioError:
            continue
        if changed.to_text()[key] != now:
            return changed
    return None
