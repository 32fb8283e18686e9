"""A replay gives the same result in Pyodide, fed text slices as the page will feed it, as in CPython."""

import json
import shutil
import subprocess
from pathlib import Path

from lab.site.build import _write_wheel, pyodide_dir
from model import Scenario, generate, replay, trace_lines

HERE = Path(__file__).resolve().parent
TRACE = HERE.parents[1] / "shared" / "traces" / "conversation_trace.jsonl"


def test_replay_and_export_agree_in_cpython_and_pyodide(tmp_path):
    node = shutil.which("node")
    assert node, "Node.js is needed for this test (the project's setup installs the npm pyodide package)"
    trace = tmp_path / "conversation-1500.jsonl"
    with open(TRACE, "rb") as f:
        trace.write_bytes(b"".join(next(f) for _ in range(1500)))
    wheel = tmp_path / _write_wheel(tmp_path / "wheels")
    done = subprocess.run([node, str(HERE / "pyodide_replay.mjs"), str(pyodide_dir()), str(wheel), str(trace)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)
    result = replay(Scenario().with_text({"fleet.replicas": "4", "router.kind": "cache_aware"}),
                    lambda: [trace.read_bytes()])
    assert got["result"] == json.loads(json.dumps(result.to_dict()))
    assert got["records"] == [r.to_dict() for r in result.records]
    assert got["progress"] == [["checking", 1000], ["checking", 1500], ["replaying", 1000], ["replaying", 1500]]
    assert got["exported"] == list(trace_lines(generate(Scenario().with_text({"duration_s": "30"})), 16))
