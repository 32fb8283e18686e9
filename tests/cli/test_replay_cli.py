"""`prefix-lab replay FILE` and `prefix-lab run --trace-out FILE`: results, files written, one-line errors."""

import json
import subprocess
import sys

import pytest
from helpers import TRACES

from lab.cli.main import main
from model import Scenario, generate


@pytest.fixture(scope="module")
def slice_file(tmp_path_factory):
    """The conversation trace's first 300 requests."""
    path = tmp_path_factory.mktemp("traces") / "conversation-300.jsonl"
    with open(TRACES / "conversation_trace.jsonl", "rb") as f:
        path.write_bytes(b"".join(next(f) for _ in range(300)))
    return path


def test_replay_prints_a_summary(slice_file, capsys):
    assert main(["replay", str(slice_file), "--set", "fleet.replicas=4", "--set", "router.kind=cache_aware"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"trace {slice_file}, 512-token blocks, speedup 1\n300 requests over ")
    assert "router cache_aware" in out and "hit rate" in out


def test_replay_json_and_request_records(slice_file, tmp_path, capsys):
    records = tmp_path / "requests.jsonl"
    assert main(["replay", str(slice_file), "--json", "--speedup", "2", "--set", "fleet.memory_gb=none",
                 "--requests", str(records)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["requests"] == 300 and data["trace"]["speedup"] == 2.0
    assert data["scenario"]["fleet"]["memory_gb"] is None
    lines = [json.loads(x) for x in records.read_text().splitlines()]
    assert len(lines) == 300 and {r["session"] for r in lines} == {-1}
    assert sum(r["cached_tokens"] for r in lines) / sum(r["prompt_tokens"] for r in lines) == pytest.approx(
        data["hit_rate"], abs=1e-6)


def test_run_writes_its_traffic_as_a_trace_that_replays(tmp_path, capsys):
    out = tmp_path / "lab.jsonl"
    assert main(["run", "--set", "duration_s=60", "--trace-out", str(out), "--block-tokens", "16"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == len(generate(Scenario().with_text({"duration_s": "60"})))
    assert set(rows[0]) == {"timestamp", "input_length", "output_length", "hash_ids"}
    capsys.readouterr()
    assert main(["replay", str(out), "--block-tokens", "16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["requests"] == len(rows)


@pytest.mark.parametrize("args, message", [
    (["replay", "nowhere.jsonl"], "cannot read trace nowhere.jsonl: No such file or directory"),
    (["replay", "{bad}", "--set", "traffic.session_rate=3"],
     "--set traffic.session_rate: replayed traffic comes from the trace; set fleet.*, router.*, hardware.* or seed"),
    (["replay", "{bad}", "--set", "duration_s=30"], "--set duration_s: replayed traffic comes from the trace"),
    (["replay", "{bad}", "--block-tokens", "0"], "argument --block-tokens: 0 is below 1"),
    (["replay", "{bad}", "--speedup", "-2"], "argument --speedup: -2 is not a number above 0"),
    (["replay", "{bad}"], "{bad} line 3: timestamp 5 is before line 2's 9; a trace lists requests in time order"),
    (["replay", "{bad}", "--block-tokens", "4"], "{bad} line 1: 1 hash_ids, but input_length 10 makes 3 blocks"),
    (["replay", "{empty}"], "{empty}: the trace has no requests"),
])
def test_bad_input_is_one_line_and_status_two(tmp_path, capsys, args, message):
    bad, empty = tmp_path / "bad.jsonl", tmp_path / "empty.jsonl"
    bad.write_text("".join(json.dumps({"timestamp": t, "input_length": 10, "output_length": 1, "hash_ids": [t]}) + "\n"
                           for t in (0, 9, 5)))
    empty.write_text("\n")
    names = {"{bad}": str(bad), "{empty}": str(empty)}
    args = [names.get(a, a) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    expected = message.replace("{bad}", str(bad)).replace("{empty}", str(empty))
    assert err.startswith("prefix-lab: error: " + expected) and err.count("\n") == 1


def test_a_bad_trace_ends_the_command_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": []}\n')
    done = subprocess.run([sys.executable, "-m", "lab", "replay", str(bad)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == f"prefix-lab: error: {bad} line 1: hash_ids is empty; a prompt has at least one block\n"
