"""The `prefix-lab run` command: output forms and one-line errors."""

import json
import subprocess
import sys

import pytest

from lab.cli.main import main
from model import Scenario, simulate

REQUEST_FIELDS = ["arrival_s", "session", "turn", "system_prompt", "replica", "prompt_tokens", "user_tokens",
                  "answer_tokens", "cached_tokens", "queue_ms", "prefill_ms", "ttft_ms"]


def test_run_prints_a_readable_summary(capsys):
    assert main(["run", "--set", "fleet.replicas=2"]) == 0
    out = capsys.readouterr().out
    expected = simulate(Scenario().with_text({"fleet.replicas": "2"}))
    assert f"{expected.requests} requests" in out and "hit rate" in out and "p99" in out
    assert out.count("\n  ") == 2  # one line per replica


def test_run_json_is_the_result(capsys, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"fleet": {"replicas": 3}, "router": {"kind": "cache_aware"}}))
    assert main(["run", str(path), "--set", "seed=5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = simulate(Scenario().with_text({"fleet.replicas": "3", "router.kind": "cache_aware", "seed": "5"}))
    assert data == json.loads(json.dumps(expected.to_dict()))
    for key in ("requests", "hit_rate", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "ttft_mean_ms", "throughput_rps"):
        assert key in data


def test_requests_file_has_one_line_per_request(tmp_path, capsys):
    out = tmp_path / "req.jsonl"
    assert main(["run", "--set", "duration_s=60", "--requests", str(out)]) == 0
    lines = out.read_text().splitlines()
    result = simulate(Scenario().with_text({"duration_s": "60"}))
    assert len(lines) == result.requests
    first = json.loads(lines[0])
    assert set(REQUEST_FIELDS) <= set(first)
    assert first == result.records[0].to_dict()


@pytest.mark.parametrize("argv, message", [
    (["run", "--set", "fleet.replicas=0"], "fleet.replicas: 0 is out of range"),
    (["run", "--set", "fleet.replica=2"], "did you mean fleet.replicas?"),
    (["run", "--set", "replicas"], "write it as key=value"),
    (["run", "missing.json"], "cannot read scenario file missing.json"),
    (["run", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["walk"], "invalid choice: 'walk'"),
])
def test_bad_input_exits_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("prefix-lab: error: ") and message in err


def test_bad_scenario_files_are_named(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text('{"fleet": {"replicas": 8},')
    assert main(["run", str(broken)]) == 2
    assert f"{broken}: not valid JSON at line 1" in capsys.readouterr().err
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"fleet": {"replicas": "eight"}}')
    assert main(["run", str(wrong)]) == 2
    assert f"{wrong}: fleet.replicas: \"eight\" is not allowed" in capsys.readouterr().err


def test_the_installed_command_runs_without_a_traceback():
    bad = subprocess.run([sys.executable, "-m", "lab", "run", "--set", "router.kind=psychic"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "router.kind: \"psychic\" is not allowed" in bad.stderr
    good = subprocess.run([sys.executable, "-m", "lab", "run", "--json", "--set", "duration_s=30"],
                          capture_output=True, text=True)
    assert good.returncode == 0 and json.loads(good.stdout)["requests"] > 0


def test_keys_lists_every_scenario_key_with_default_and_range(capsys):
    from model import KEYS

    assert main(["keys", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["key"] for r in rows] == list(KEYS)
    replicas = next(r for r in rows if r["key"] == "fleet.replicas")
    assert replicas == {"key": "fleet.replicas", "default": "4", "allowed": "1 to 64", "page": "1 to 16, step 1",
                        "meaning": "number of replicas"}
    assert next(r for r in rows if r["key"] == "router.kind")["allowed"].startswith("round_robin | random")
    assert main(["keys"]) == 0 and "fleet.cache" in capsys.readouterr().out
