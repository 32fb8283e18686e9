"""The same scenario gives byte-identical results in CPython and in Pyodide (npm `pyodide` under Node.js), and a
replay gives the same result there, fed text slices as the page will feed it. Pyodide boots once, in one Node.js
process, for both (pyodide_run.mjs)."""

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import TRACES, everything

from lab.page.view import handle
from lab.site.build import _write_wheel, pyodide_dir
from model import Scenario, generate, replay, simulate, trace_lines

HERE = Path(__file__).resolve().parent
TRACE = TRACES / "conversation_trace.jsonl"
SCENARIOS = [
    {},
    {"fleet.replicas": "8", "router.kind": "cache_aware", "events": "burst@60+30x3,timestamp@150"},
    {"router.kind": "random", "seed": "42", "dynamic_text": "bottom", "fleet.memory_gb": "0.5"},
    {"router.kind": "consistent_hash", "events": "surge@30+120", "traffic.session_rate": "4", "duration_s": "200"},
    # serving mode: batched decode under one KV budget, closed-form decode runs (math.sqrt), sessions that wait
    {"fleet.decode": "true"},
    {"fleet.decode": "true", "fleet.chunked_prefill": "false", "router.kind": "cache_aware",
     "events": "burst@60+30x4,timestamp@150", "fleet.memory_gb": "2"},
    {"fleet.decode": "true", "hardware.preset": "llama8b_a100", "events": "surge@30+60", "fleet.replicas": "6",
     "router.kind": "cache_aware", "dynamic_text": "bottom", "fleet.token_budget": "512"},
    # a measured GPU in lab mode (issue 27): each prefill one pass of the H100 fit (its blend of 2: square roots)
    {"hardware.preset": "qwen14b_h100", "duration_s": "60", "router.kind": "cache_aware"},
    # a person's own GPU fit, read from its text by the model (blend 8: three square roots)
    {"hardware.preset": "llama8b_a100", "fleet.decode": "true", "duration_s": "60",
     "hardware.gpu_fit": "gpufit1,mine,64,2.1e12,3.3e14,5e-06,8,emb:2e-06:1e-11,input_layernorm:2e-06:5e-12,"
                         "attn_rope:2e-06:4e-12,post_attention_layernorm:2e-06:5e-12,mlp_act:1e-06:5e-12,"
                         "add:1.5e-06:3e-12,@512.0:1.2e14,@4096.0:2.4e14"},
]


@pytest.fixture(scope="module")
def in_pyodide(tmp_path_factory):
    """What pyodide_run.mjs printed: the Python version, a line per scenario, the view's answer, the replay."""
    node = shutil.which("node")
    assert node, "Node.js is needed for this test (the project's setup installs the npm pyodide package)"
    tmp = tmp_path_factory.mktemp("pyodide")
    wheel = tmp / _write_wheel(tmp / "wheels")
    scenarios = tmp / "scenarios.json"
    scenarios.write_text(json.dumps(SCENARIOS))
    trace = tmp / "conversation-1500.jsonl"
    with open(TRACE, "rb") as f:
        trace.write_bytes(b"".join(next(f) for _ in range(1500)))
    done = subprocess.run([node, str(HERE / "pyodide_run.mjs"), str(pyodide_dir()), str(wheel), str(scenarios),
                           str(trace)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    version, *lines, replayed = done.stdout.strip().split("\n")
    return {"version": version, "lines": lines, "replayed": json.loads(replayed), "trace": trace}


def test_cpython_and_pyodide_agree_to_the_byte(in_pyodide):
    version, lines = in_pyodide["version"], in_pyodide["lines"]
    assert version.startswith("3."), version
    assert len(lines) == len(SCENARIOS) + 1
    for text, line in zip(SCENARIOS, lines):  # pyodide_run.mjs writes helpers.everything() of each
        expected = everything(simulate(Scenario().with_text(text)))
        assert hashlib.sha256(line.encode()).hexdigest() == hashlib.sha256(expected.encode()).hexdigest(), text
    view = json.dumps(handle({"hash": "fleet.replicas=3&router.kind=cache_aware"}), sort_keys=True)
    assert lines[-1] == view


def test_replay_and_export_agree_in_cpython_and_pyodide(in_pyodide):
    got, trace = in_pyodide["replayed"], in_pyodide["trace"]
    result = replay(Scenario().with_text({"fleet.replicas": "4", "router.kind": "cache_aware"}),
                    lambda: [trace.read_bytes()])
    assert got["result"] == json.loads(json.dumps(result.to_dict()))
    assert got["records"] == [r.to_dict() for r in result.records]
    assert got["progress"] == [["checking", 1000], ["checking", 1500], ["replaying", 1000], ["replaying", 1500]]
    assert got["exported"] == list(trace_lines(generate(Scenario().with_text({"duration_s": "30"})), 16))
